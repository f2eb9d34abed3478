#!/usr/bin/env python3
"""scripts/test_figures.py: a test's `figure:` lines become a result file;
several runs give the median, _min and _max; a failed run or a run with no
figure writes nothing."""
import json
import os
import subprocess
import sys
import tempfile

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts", "test_figures.py")


def run(script_body, repeat=1):
    with tempfile.TemporaryDirectory() as d:
        prog = os.path.join(d, "t.py")
        with open(prog, "w") as f:
            f.write(script_body)
        out = os.path.join(d, "r.json")
        r = subprocess.run([sys.executable, SCRIPT, "--repeat", str(repeat), "--result", out, "demo", "--",
                            sys.executable, prog, os.path.join(d, "count")], capture_output=True, text=True)
        doc = json.load(open(out)) if os.path.exists(out) else None
        return r.returncode, doc


# Each run prints a figure that grows by one per run (a counter file beside it).
COUNTING = """
import os, sys
p = sys.argv[1]
n = int(open(p).read()) if os.path.exists(p) else 0
open(p, "w").write(str(n + 1))
print("some test output: 3 of 4")
print(f"figure: complete_pct = {97.5 + n}")
print(f"figure: samples = {100 + 10 * n}")
"""


def main():
    failures = []
    code, doc = run(COUNTING)
    if code != 0 or doc["figures"] != {"complete_pct": 97.5, "samples": 100}:
        failures.append(f"one run: {code} {doc}")
    code, doc = run(COUNTING, repeat=3)
    want = {"complete_pct": 98.5, "complete_pct_min": 97.5, "complete_pct_max": 99.5,
            "samples": 110, "samples_min": 100, "samples_max": 120}
    if code != 0 or doc["figures"] != want:
        failures.append(f"three runs: {code} {doc and doc['figures']}")
    code, doc = run("import sys\nprint('figure: x = 1')\nsys.exit(3)\n")
    if code != 3 or doc is not None:
        failures.append(f"a failed run wrote a result: {code} {doc}")
    code, doc = run("print('no figures here')\n")
    if code == 0 or doc is not None:
        failures.append(f"no figure lines passed: {code} {doc}")
    code, doc = run("print('figure: x = 1')\nprint('figure: x = 2')\n")
    if code == 0 or doc is not None:
        failures.append(f"a key printed twice passed: {code} {doc}")
    for f in failures:
        print("FAIL:", f)
    print("test_figures_test:", "ok" if not failures else f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
