#!/usr/bin/env python3
"""Figures a test prints, as a bench result file (bench/results/NAME.json).

Some figures in docs/ are measured by tests (the Go, node and kernel-maps
recordings): each prints its figures as lines `figure: KEY = VALUE`
(tests/test_support.h's PrintFigure). This runs a test command --repeat
times, collects those lines and writes them through bench/result_file.py,
so the docs mark them like any bench figure (FILE/KEY). With more than
one run each key gets the median of the runs, KEY_min and KEY_max.

  python3 scripts/test_figures.py record_go -- build/tests/record_go_priv_test
  python3 scripts/test_figures.py --repeat 3 record_kernel_maps -- \\
      build/tests/record_kernel_maps_priv_test

The command's own exit status is passed on; figures are written only when
every run passed (a failed run's figures are not a measurement).
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import result_file  # noqa: E402

FIGURE = re.compile(r"^figure: ([A-Za-z0-9_]+) = (-?[0-9]+(?:\.[0-9]+)?)\s*$")


def parse(text):
    """{key: value} from `figure: KEY = VALUE` lines; a key printed twice is an error."""
    figures = {}
    for line in text.splitlines():
        m = FIGURE.match(line.strip())
        if not m:
            continue
        key, text = m.group(1), m.group(2)
        if key in figures:
            raise ValueError(f"figure {key} printed twice in one run")
        figures[key] = float(text) if "." in text else int(text)
    return figures


def combine(runs):
    """One run's figures as they are; several: the median, _min and _max of each key."""
    if len(runs) == 1:
        return dict(runs[0])
    keys = set().union(*runs)
    missing = [k for k in keys if any(k not in r for r in runs)]
    if missing:
        raise ValueError(f"figures not printed by every run: {sorted(missing)}")
    out = {}
    for k in sorted(keys):
        vals = [r[k] for r in runs]
        med = statistics.median(vals)
        out[k] = med if not float(med).is_integer() or any(isinstance(v, float) for v in vals) else int(med)
        out[k + "_min"] = min(vals)
        out[k + "_max"] = max(vals)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("name", help="the result file's name (bench/results/NAME.json)")
    ap.add_argument("--note", default="")
    ap.add_argument("--result", help="where to write (default bench/results/NAME.json)")
    argv = sys.argv[1:]
    if "--" not in argv:
        ap.error("no test command after --")
    at = argv.index("--")
    a = ap.parse_args(argv[:at])
    cmd = argv[at + 1:]
    if not cmd:
        ap.error("no test command after --")
    runs = []
    for i in range(a.repeat):
        p = subprocess.run(cmd, capture_output=True, text=True)
        sys.stdout.write(p.stdout)
        sys.stderr.write(p.stderr)
        if p.returncode != 0:
            print(f"test_figures: run {i + 1} of {' '.join(cmd)} failed ({p.returncode}): no result written",
                  file=sys.stderr)
            return p.returncode
        try:
            figs = parse(p.stdout)
        except ValueError as e:
            print(f"test_figures: {e}", file=sys.stderr)
            return 1
        if not figs:
            print(f"test_figures: {' '.join(cmd)} printed no `figure:` line", file=sys.stderr)
            return 1
        runs.append(figs)
    try:
        figures = combine(runs)
    except ValueError as e:
        print(f"test_figures: {e}", file=sys.stderr)
        return 1
    for k, v in figures.items():
        print(f"{a.name}/{k} = {v}")
    result_file.write(a.name, figures, a.note, a.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
