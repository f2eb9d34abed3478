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
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import interp_cost  # noqa: E402

if __name__ == "__main__":
    interp_cost.bench_main(__doc__, "perl", ".pl", "/usr/bin/perl", ("perl", "hot.pl", "deep"), "perl 5.36 deep")
