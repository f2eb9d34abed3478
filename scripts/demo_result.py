#!/usr/bin/env python3
"""Turns the output of a fresh-root demo (scripts/demo_fresh_root.sh) into
bench/results/first_flame_graph_CODENAME.json, the file docs/INSTALL.md's
(and the README's) first-flame-graph figures are checked against (scripts/check_figures.py).

  demo_result.py CODENAME [--note TEXT] < OUTPUT

OUTPUT holds scripts/demo.sh's closing line ("demo.sh: flame graph after
245 s: packages 21 s, configure+build 218 s, record 6 s; CPU seconds: 16,
145, 3 (2 CPUs, load average 4.79 5.90 7.45)") and demo_fresh_root.sh's
("Debian 12.15 (bookworm) root: first flame graph after 245 s ...")."""
import argparse
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bench"))
import result_file  # noqa: E402

PHASES = re.compile(
    r"demo\.sh: flame graph after (\d+) s: packages (\d+) s, configure\+build (\d+) s, "
    r"record (\d+) s; CPU seconds: (\d+), (\d+), (\d+) \((\d+) CPUs, load average ([\d.]+) ([\d.]+) ([\d.]+)\)")
ROOT = re.compile(r"Debian ([\d.]+) \((\w+)\) root: first flame graph after (\d+) s")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("codename")
    ap.add_argument("--note", default="")
    args = ap.parse_args()
    text = sys.stdin.read()
    phases, root = PHASES.search(text), ROOT.search(text)
    if not phases or not root:
        sys.exit("demo_result.py: the demo's output lacks its timing lines "
                 "('demo.sh: flame graph after ...' and 'Debian ... root: first flame graph after ...')")
    p = [float(x) for x in phases.groups()]
    figures = {"total_s": float(root.group(3)), "demo_total_s": p[0], "packages_s": p[1],
               "build_s": p[2], "record_s": p[3], "packages_cpu_s": p[4], "build_cpu_s": p[5],
               "record_cpu_s": p[6], "cpus": p[7], "loadavg_1min_at_end": p[8],
               "debian_version": float(root.group(1))}
    result_file.command = lambda: f"bash scripts/demo_fresh_root.sh {args.codename}"
    result_file.write(f"first_flame_graph_{args.codename}", figures,
                      note=args.note)


if __name__ == "__main__":
    main()
