#!/usr/bin/env python3
"""BPF time per sample of the Ruby walk: Debian 12's ruby3.1 running
testdata/ruby/deep.rb (deep() recursing 50 Ruby frames, spinning at the
bottom in Ruby code, all in one vm_exec_core call), recorded with its Ruby
frames and with --no-ruby (the same process's native walk alone:
vm_exec_core and its callers), so the difference is what the Ruby walk adds
per sample. How each run is made and judged, and --before:
bench/interp_cost.py. Needs root and /usr/bin/ruby3.1. Writes
bench/results/ruby_cost.json.
  python3 bench/ruby_cost.py [--reps 5] [--seconds 3] [--before BASE/ehprof]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import interp_cost  # noqa: E402

if __name__ == "__main__":
    interp_cost.bench_main(__doc__, "ruby", ".rb", "/usr/bin/ruby3.1", ("ruby", "deep.rb"), "ruby3.1 deep")
