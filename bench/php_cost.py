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
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import interp_cost  # noqa: E402

if __name__ == "__main__":
    interp_cost.bench_main(__doc__, "php", ".php", "/usr/bin/php8.2", ("php", "mix.php", "deep"), "php8.2 deep")
