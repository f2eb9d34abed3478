#!/usr/bin/env python3
"""BPF time per sample of the Python walk measured as the Ruby, PHP and
Perl walks' are (bench/interp_cost.py --alternate): testdata/python/
shapes.py's `deep` shape (a hot loop under about 50 Python frames) recorded
with --alternate-interp-walks, every other sample of a CPU walking native
frames only, so the added cost is the difference of the two halves of one
run. bench/python_cost.py compares two runs instead; on a VM whose speed
moves between runs this one is the figure to set beside the other
runtimes'. Needs root and the interpreter (default: pyenv's 3.12.1).
Writes bench/results/python_alternate_cost.json.
  python3 bench/python_alternate_cost.py [--reps 10] [--seconds 2] [--interp PYTHON]
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import interp_cost  # noqa: E402

if __name__ == "__main__":
    interp_cost.bench_main(__doc__, "python", ".py", "/root/.pyenv/versions/3.12.1/bin/python3.12",
                           ("python", "shapes.py", "deep"), "python3.12 deep", name="python_alternate_cost",
                           alternate=True)
