#!/usr/bin/env python3
"""BPF time per sample of the PHP walk: Debian 12's php8.2 running
testdata/php/mix.php's deep mode (deep() recursing 50 PHP frames, spinning
at the bottom, all in one execute_ex call), recorded with its PHP frames and
with --no-php (the same process's native walk alone: execute_ex and its
callers), so the difference is what the PHP walk adds per sample. How each
run is made and judged, and --before: bench/interp_cost.py. Needs root and
/usr/bin/php8.2. Writes bench/results/php_cost.json.
  python3 bench/php_cost.py [--reps 5] [--seconds 3] [--before BASE/ehprof]
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
    interp_cost.add_arguments(ap, ROOT, "php")
    ap.add_argument("--interp", default="/usr/bin/php8.2")
    args = ap.parse_args()
    argv = [args.interp, os.path.join(ROOT, "testdata", "php", "mix.php"), "deep"] + [str(args.warm + args.seconds + 5)]
    interp_cost.report(args, argv, "php", ".php", "php8.2 deep")


if __name__ == "__main__":
    main()
