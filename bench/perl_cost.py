#!/usr/bin/env python3
"""BPF time per sample of the Perl walk: Debian 12's perl 5.36 running
testdata/perl/hot.pl's deep mode (deep() recursing 50 subs, spinning at
the bottom, all in one run loop call), recorded with its Perl frames and
with --no-perl (the same process's native walk alone: the run loop and its
callers), so the difference is what the Perl walk adds per sample; through
bench/interp_cost.py as bench/php_cost.py. Needs root and perl. Writes
bench/results/perl_cost.json.
  python3 bench/perl_cost.py [--reps 3] [--seconds 3] [--before BASE/ehprof]
--before runs a base build in the same interleaved runs (its figures as
the result's before_* keys), so a change is compared under one load.
"""
import argparse
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import interp_cost  # noqa: E402
import result_file  # noqa: E402

HOT = os.path.join(ROOT, "testdata", "perl", "hot.pl")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    interp_cost.add_arguments(ap, ROOT)
    ap.add_argument("--before", help="another ehprof build, measured interleaved with --ehprof's")
    ap.add_argument("--perl", default="/usr/bin/perl")
    result_file.add_argument(ap, "perl_cost")
    args = ap.parse_args()
    argv = [args.perl, HOT, "deep", str(args.warm + args.seconds + 5)]
    (on_us, native_us, frames), before = interp_cost.before_figures(args, argv, "perl", ".pl", "perl")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.2f}; "
          f"median of {args.reps} interleaved runs, {args.hz} Hz")
    print(f"perl 5.36 deep, Perl frames ({frames:.0f} a sample): {on_us:.2f} us; native walk only: {native_us:.2f} us; "
          f"the Perl walk adds {on_us - native_us:.2f} us")
    figures = {"perl_bpf_us": round(on_us, 2), "native_bpf_us": round(native_us, 2),
               "perl_added_us": round(on_us - native_us, 2), "perl_frames": frames, "hz": args.hz,
               "reps": args.reps}
    figures.update(before)
    if not args.no_result:
        result_file.write("perl_cost", figures, args.note, args.result)


if __name__ == "__main__":
    main()
