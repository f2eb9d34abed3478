#!/usr/bin/env python3
"""Checks that each marked figure in the docs equals its bench result file.

A figure is marked by an HTML comment right after its number, invisible
when the Markdown is rendered:

    98.6<!--fig:kernel_maps/exec_pct--> % of their samples

names bench/results/kernel_maps.json and its figures["exec_pct"]. The
number as written must equal the result rounded to the decimals written
("98.6" accepts 98.55..98.65; "11" accepts 10.5..11.5; thousands
separators are ignored). Markers in `code` spans and fenced blocks are examples, not figures. A
marker without a number before it, a result
file or key that does not exist, or a figure that differs fails the check,
naming the file, line, key, what is written and what the result says.

    scripts/check_figures.py [--results DIR] [--list] [--write] FILE.md [FILE.md...]

--write rewrites each figure that differs to its result, with the decimals
and thousands separators written before (after re-running a bench; the
prose around it, its date and conditions, is still the writer's to check).

Exit status 1 on any failure. Standard library only.
"""
import argparse
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MARKER = re.compile(r"(-?\d[\d,]*(?:\.\d+)?)?(?P<m><!--fig:([A-Za-z0-9_.-]+)/([A-Za-z0-9_.-]+)-->)")


def load(results_dir, name, cache):
    if name not in cache:
        path = os.path.join(results_dir, name + ".json")
        try:
            with open(path) as f:
                cache[name] = json.load(f)
        except (OSError, ValueError) as e:
            cache[name] = e
    return cache[name]


def decimals(written):
    """How many decimals a figure is written with ("16,213,455" 0, "99.52" 2)."""
    plain = written.replace(",", "")
    return len(plain.split(".")[1]) if "." in plain else 0


def check_value(written, value):
    """None if `written` is `value` rounded as written, else why not."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return f"result is not a number: {value!r}"
    rounded = f"{value:.{decimals(written)}f}"
    if float(rounded) == float(written.replace(",", "")):
        return None
    return f"written {written}, result {value} (rounds to {rounded})"


def formatted(written, value):
    """`value` written as `written` was: its decimals, its thousands separators."""
    return f"{value:{',' if ',' in written else ''}.{decimals(written)}f}"


def without_code(line):
    """The line with `code spans` blanked: a marker shown as an example is
    not a figure."""
    return re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), line)


def check(paths, results_dir, listing=False, write=False):
    cache, errors, n = {}, [], 0
    for path in paths:
        with open(path) as f:
            original = f.read()
        lines = original.splitlines()
        changed = False
        fenced = False
        for lineno, line in enumerate(lines, 1):
            if line.lstrip().startswith("```"):
                fenced = not fenced
            if fenced:
                continue
            text = without_code(line)
            good = {m.start("m") for m in MARKER.finditer(text)}
            for bad in re.finditer(r"<!--\s*fig\b", text):
                if bad.start() not in good:
                    n += 1
                    errors.append(f"{os.path.relpath(path)}:{lineno}: malformed marker "
                                  f"{text[bad.start():bad.start() + 60]!r} (want <!--fig:NAME/KEY-->)")
            edits = []
            for m in MARKER.finditer(text):
                written, _, name, key = m.groups()
                where = f"{os.path.relpath(path)}:{lineno}: {name}/{key}"
                n += 1
                if written is None:
                    errors.append(f"{where}: no number right before the marker")
                    continue
                doc = load(results_dir, name, cache)
                if isinstance(doc, Exception):
                    errors.append(f"{where}: cannot read the result file: {doc}")
                    continue
                figures = doc.get("figures", {})
                if key not in figures:
                    errors.append(f"{where}: no figure {key!r} in {name}.json "
                                  f"(it has {', '.join(sorted(figures)) or 'none'})")
                    continue
                why = check_value(written, figures[key])
                if why and write:
                    edits.append((m.start(1), m.end(1), formatted(written, figures[key])))
                    print(f"{where}: {written} -> {edits[-1][2]}")
                elif why:
                    errors.append(f"{where}: {why} ({name}.json: {doc.get('date')}, "
                                  f"commit {doc.get('commit')}, `{doc.get('command')}`)")
                elif listing:
                    m_ = doc.get("machine", {})
                    print(f"{where} = {written} ({doc.get('date')}, {m_.get('kind')}, "
                          f"load {m_.get('loadavg_start')})")
            for start, end, new in reversed(edits):
                line = line[:start] + new + line[end:]
            if edits:
                lines[lineno - 1] = line
                changed = True
        if changed:
            with open(path, "w") as f:
                f.write("\n".join(lines) + ("\n" if original.endswith("\n") else ""))
    return n, errors


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=os.path.join(ROOT, "bench", "results"))
    ap.add_argument("--list", action="store_true", help="print every figure checked")
    ap.add_argument("--write", action="store_true",
                    help="rewrite each figure that differs to its result file's value")
    ap.add_argument("files", nargs="+")
    a = ap.parse_args(argv)
    n, errors = check(a.files, a.results, a.list, a.write)
    for e in errors:
        print(e)
    if n == 0:
        print("no marked figures found in " + ", ".join(a.files))
        return 1
    print(f"{n} marked figures, {len(errors)} disagree with their result files" if errors
          else f"{n} marked figures, each equal to its result file")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
