#!/usr/bin/env python3
"""scripts/check_figures.py on made-up docs and results: it passes only when
every marked figure equals its result file, and fails, naming file, line
and key, on a deliberate mismatch, an unknown key or file, and a marker
with no number."""
import json
import os
import subprocess
import sys
import tempfile

CHECKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts",
                       "check_figures.py")


def run(doc, results):
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(os.path.join(d, "results"))
        for name, figures in results.items():
            with open(os.path.join(d, "results", name + ".json"), "w") as f:
                json.dump({"bench": name, "date": "2026-11-26T06:00:00Z", "commit": "x",
                           "command": "python3 bench/" + name + ".py", "figures": figures}, f)
        with open(os.path.join(d, "README.md"), "w") as f:
            f.write(doc)
        r = subprocess.run([sys.executable, CHECKER, "--results", os.path.join(d, "results"),
                            os.path.join(d, "README.md")], capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr


def expect(code, out, want_code, *want_text):
    assert code == want_code, (code, out)
    for t in want_text:
        assert t in out, (t, out)


RESULTS = {"walk": {"complete_pct": 99.52, "rows": 16213455, "ratio": 11.06}}
GOOD = ("| fio | complete 99.5<!--fig:walk/complete_pct--> % |\n"
        "0 mismatches in 16,213,455<!--fig:walk/rows--> rows, 11<!--fig:walk/ratio-->x faster\n")

expect(*run(GOOD, RESULTS), 0, "3 marked figures, each equal")
# The deliberate mismatch: the README says 99.6 where the result is 99.52.
expect(*run(GOOD.replace("99.5<", "99.6<"), RESULTS), 1, "README.md:1: walk/complete_pct",
       "written 99.6, result 99.52", "1 disagree")
# More decimals than the result supports are a mismatch too.
expect(*run(GOOD.replace("99.5<", "99.520<"), RESULTS), 0)
expect(*run(GOOD.replace("99.5<", "99.521<"), RESULTS), 1, "rounds to 99.520")
expect(*run(GOOD.replace("walk/rows", "walk/row"), RESULTS), 1, "no figure 'row' in walk.json")
expect(*run(GOOD.replace("walk/ratio", "gone/ratio"), RESULTS), 1, "gone/ratio: cannot read")
expect(*run(GOOD.replace("11<!--", "x<!--"), RESULTS), 1, "no number right before the marker")
expect(*run("no figures here\n", RESULTS), 1, "no marked figures")
expect(*run(GOOD + "and 7<!-- fig:walk/rows -->\n", RESULTS), 1, "README.md:3: malformed marker")
# An example in a code span or block is not a figure.
expect(*run(GOOD + "write `1.5<!--fig:NAME/KEY-->`\n```\n2<!--fig:x/y-->\n```\n", RESULTS), 0,
       "3 marked figures")


def run_pages(pages, results):
    """The check over several files at once (README.md and docs/ pages)."""
    with tempfile.TemporaryDirectory() as d:
        os.makedirs(os.path.join(d, "results"))
        os.makedirs(os.path.join(d, "docs"))
        for name, figures in results.items():
            with open(os.path.join(d, "results", name + ".json"), "w") as f:
                json.dump({"bench": name, "figures": figures}, f)
        paths = []
        for rel, doc in pages.items():
            paths.append(os.path.join(d, rel))
            with open(paths[-1], "w") as f:
                f.write(doc)
        r = subprocess.run([sys.executable, CHECKER, "--results", os.path.join(d, "results")] + paths,
                           capture_output=True, text=True)
        return r.returncode, r.stdout + r.stderr


# Figures are counted over every file given, and a mismatch names its page.
PAGES = {"README.md": GOOD, "docs/FIGURES.md": "the walk: 99.5<!--fig:walk/complete_pct--> %\n"}
expect(*run_pages(PAGES, RESULTS), 0, "4 marked figures, each equal")
PAGES["docs/FIGURES.md"] = "intro\nthe walk: 99.6<!--fig:walk/complete_pct--> %\n"
expect(*run_pages(PAGES, RESULTS), 1, "FIGURES.md:2: walk/complete_pct", "1 disagree")


def run_write(doc, results):
    """--write on doc: (exit status, the doc afterwards, then a plain check's status)."""
    with tempfile.TemporaryDirectory() as d:
        os.mkdir(os.path.join(d, "results"))
        for name, figures in results.items():
            with open(os.path.join(d, "results", name + ".json"), "w") as f:
                json.dump({"bench": name, "figures": figures}, f)
        md = os.path.join(d, "README.md")
        with open(md, "w") as f:
            f.write(doc)
        args = [sys.executable, CHECKER, "--results", os.path.join(d, "results")]
        w = subprocess.run(args + ["--write", md], capture_output=True, text=True)
        after = open(md).read()
        c = subprocess.run(args + [md], capture_output=True, text=True)
        return w.returncode, after, c.returncode


# --write brings each figure to its result as it was written (decimals,
# separators), leaves code spans and the rest of the line alone.
NEW = {"walk": {"complete_pct": 98.137, "rows": 17000001, "ratio": 9.6}}
code, after, recheck = run_write(GOOD + "`7<!--fig:walk/rows-->`\n", NEW)
assert code == 0 and recheck == 0, (code, recheck, after)
assert after == ("| fio | complete 98.1<!--fig:walk/complete_pct--> % |\n"
                 "0 mismatches in 17,000,001<!--fig:walk/rows--> rows, 10<!--fig:walk/ratio-->x faster\n"
                 "`7<!--fig:walk/rows-->`\n"), after
print("check_figures_test OK")
