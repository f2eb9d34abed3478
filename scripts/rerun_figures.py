#!/usr/bin/env python3
"""Re-runs the commands behind the figures of README.md and docs/, one after another.

Each bench/results/NAME.json records the command that wrote it; this runs
those commands again (their --note replaced by this run's), so every
result file is re-derived on the machine at hand, then says which
figures moved (`scripts/check_figures.py README.md docs/*.md`; `--write` there
brings them to the new results). The kernel matrices run through their
shell wrappers, which set up the guests' environment.

  python3 scripts/rerun_figures.py --list
  python3 scripts/rerun_figures.py --only overhead,agent_memory --note "quiet"
  python3 scripts/rerun_figures.py --skip kernel_matrix,kernel_matrix_arm64

Needs root for the benches that load BPF. Standard library only.
"""
import argparse
import glob
import json
import os
import shlex
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
# Results written by a script that a wrapper runs with the environment it needs.
WRAPPERS = {
    "kernel_matrix": "bash scripts/kernel_matrix.sh --check --min-complete 99 --result",
    "kernel_matrix_arm64": "bash scripts/kernel_matrix_arm64.sh --check --result",
}


def without_note(argv):
    """argv without its --note VALUE / --note=VALUE."""
    out, skip = [], False
    for a in argv:
        if skip:
            skip = False
        elif a == "--note":
            skip = True
        elif not a.startswith("--note="):
            out.append(a)
    return out


def commands(only, skip):
    for path in sorted(glob.glob(os.path.join(RESULTS, "*.json"))):
        name = os.path.basename(path)[:-5]
        if (only and name not in only) or name in skip:
            continue
        with open(path) as f:
            doc = json.load(f)
        cmd = WRAPPERS.get(name) or doc.get("command")
        if cmd:
            yield name, without_note(shlex.split(cmd)), doc.get("date", "?")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--only", default="", help="comma-separated result names")
    ap.add_argument("--skip", default="", help="comma-separated result names")
    ap.add_argument("--note", default="", help="given to every command as --note")
    ap.add_argument("--list", action="store_true", help="print the commands, run nothing")
    a = ap.parse_args()
    only = {x for x in a.only.split(",") if x}
    skip = {x for x in a.skip.split(",") if x}
    todo = list(commands(only, skip))
    missing = only - {n for n, _, _ in todo}
    if missing:
        sys.exit(f"rerun_figures: no result file for {', '.join(sorted(missing))}")
    failed = []
    for name, argv, date in todo:
        if a.note and argv[0].startswith("python"):
            # Right after the script: before its positional arguments and any `--`.
            argv = argv[:2] + ["--note", a.note] + argv[2:]
        line = " ".join(shlex.quote(x) for x in argv)
        if a.list:
            print(f"{name} (last {date}): {line}")
            continue
        print(f"rerun_figures: {name}: {line}", file=sys.stderr, flush=True)
        t0 = time.time()
        rc = subprocess.run(argv, cwd=ROOT).returncode
        print(f"rerun_figures: {name}: exit {rc} after {time.time() - t0:.0f} s", file=sys.stderr, flush=True)
        if rc != 0:
            failed.append(name)
    if a.list:
        return 0
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "check_figures.py"),
                    os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))),
                   cwd=ROOT)
    if failed:
        print(f"rerun_figures: failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
