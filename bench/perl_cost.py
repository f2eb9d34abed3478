#!/usr/bin/env python3
"""BPF time per sample of the Perl walk: Debian 12's perl 5.36 running
testdata/perl/hot.pl's deep mode (deep() recursing 50 subs, spinning at the
bottom, all in one run loop call), recorded with its Perl frames and with
--no-perl (the same process's native walk alone: the run loop and its
callers), so the difference is what the Perl walk adds per sample. How each
run is made and judged, and --before: bench/interp_cost.py. Needs root and
/usr/bin/perl. Writes bench/results/perl_cost.json.
  python3 bench/perl_cost.py [--reps 5] [--seconds 3] [--before BASE/ehprof]
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import interp_cost  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    interp_cost.add_arguments(ap, ROOT, "perl")
    ap.add_argument("--interp", default="/usr/bin/perl")
    args = ap.parse_args()
    argv = [args.interp, os.path.join(ROOT, "testdata", "perl", "hot.pl"), "deep"] + [str(args.warm + args.seconds + 5)]
    interp_cost.report(args, argv, "perl", ".pl", "perl 5.36 deep")


if __name__ == "__main__":
    main()
