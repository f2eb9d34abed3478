#!/usr/bin/env python3
"""BPF time per sample of the PHP walk: Debian 12's php8.2 running
testdata/php/mix.php's deep mode (deep() recursing 50 PHP frames, spinning
at the bottom, all in one execute_ex call), recorded with its PHP frames
and with --no-php (the same process's native walk alone: execute_ex and its
callers), so the difference is what the PHP walk adds per sample. Each run:
the workload starts, after --warm seconds `ehprof record -p PID -F HZ -d
SECONDS` records it; the figure is ehprof's own per-sample BPF time
(bpf/*: the sampler's clock, median over the run's samples, as
bench/jvm_node_cost.py reads it; bench/interp_cost.py). Runs interleave; figures are medians
over --reps. PHP frames per sample: the median count in the run's
perf-script output. Needs root and php8.2-cli. Writes
bench/results/php_cost.json.
  python3 bench/php_cost.py [--reps 3] [--seconds 3] [--before BASE/ehprof]
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

MIX = os.path.join(ROOT, "testdata", "php", "mix.php")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    interp_cost.add_arguments(ap, ROOT)
    ap.add_argument("--before", help="another ehprof build, measured interleaved with --ehprof's")
    ap.add_argument("--php", default="/usr/bin/php8.2")
    result_file.add_argument(ap, "php_cost")
    args = ap.parse_args()
    (on_us, native_us, frames), before = interp_cost.before_figures(args, [args.php, MIX, "deep", str(args.warm + args.seconds + 5)], "php", ".php", "php")
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.2f}; "
          f"median of {args.reps} interleaved runs, {args.hz} Hz")
    print(f"php8.2 deep, PHP frames ({frames:.0f} a sample): {on_us:.2f} us; native walk only: {native_us:.2f} us; "
          f"the PHP walk adds {on_us - native_us:.2f} us")
    figures = {"php_bpf_us": round(on_us, 2), "native_bpf_us": round(native_us, 2),
               "php_added_us": round(on_us - native_us, 2), "php_frames": frames, "hz": args.hz,
               "reps": args.reps}
    figures.update(before)
    if not args.no_result:
        result_file.write("php_cost", figures, args.note, args.result)


if __name__ == "__main__":
    main()
