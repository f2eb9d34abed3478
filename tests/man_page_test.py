#!/usr/bin/env python3
"""The man page says what `ehprof --help` says: packaging/CMakeLists.txt
generates ehprof.1 from the built ehprof's own help (help2man and
packaging/cli_docs.py), so the help is its one source. Checks, for the
ehprof and man page of one build directory:
  - `man -l ehprof.1` renders with no warning (man --warnings: groff's);
  - the text of `ehprof --help` and of every command's `--help` (record,
    agent, tables, replay, compare, check: the commands --help lists)
    stands in the rendered page, in the same words and order (whitespace
    aside: help2man reflows the top-level list);
  - with --deb, the Debian package cpack makes from the build holds the
    same page gzipped at usr/share/man/man1/ehprof.1.gz, and the bash
    completion beside it.

  man_page_test.py EHPROF MAN_PAGE [--deb BUILD_DIR]"""
import gzip
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "packaging"))
import cli_docs  # noqa: E402  (the commands and their help, read as the man page's generator reads them)


def collapse(text):
    return re.sub(r"\s+", " ", text).strip()


def render(man_page):
    env = dict(os.environ, LANG="C", LC_ALL="C", MANWIDTH="250", MAN_KEEP_FORMATTING="")
    r = subprocess.run(["man", "--warnings", "-l", man_page], capture_output=True, text=True,
                       env=env)
    if r.returncode != 0:
        sys.exit(f"man_page_test: 'man -l {man_page}' failed (exit {r.returncode}): {r.stderr}")
    if r.stderr.strip():
        sys.exit(f"man_page_test: 'man -l {man_page}' warns:\n{r.stderr}")
    # Bold and underline by overstrike, should a pager's settings leak in.
    return re.sub(r".\x08", "", r.stdout)


def check_help(ehprof, rendered):
    page = collapse(rendered)
    commands = cli_docs.commands(ehprof)
    failures = []
    for args in [()] + [(c,) for c in commands]:
        text = collapse(cli_docs.run_help(ehprof, *args))
        if text not in page:
            # The first line that differs, for the message.
            lines = [collapse(line) for line in cli_docs.run_help(ehprof, *args).splitlines()]
            missing = next((line for line in lines if line and line not in page), "(the order)")
            failures.append(f"'ehprof {' '.join(args + ('--help',))}' is not in the man page: "
                            f"first missing: {missing!r}")
    return commands, failures


def check_deb(build_dir, man_page):
    with tempfile.TemporaryDirectory() as d:
        r = subprocess.run(["cpack", "-G", "DEB", "-B", d, "--config",
                            os.path.join(build_dir, "CPackConfig.cmake")],
                           capture_output=True, text=True, cwd=build_dir)
        if r.returncode != 0:
            return [f"cpack failed (exit {r.returncode}): {r.stdout[-2000:]}{r.stderr[-2000:]}"]
        debs = [f for f in os.listdir(d) if f.endswith(".deb")]
        if len(debs) != 1:
            return [f"cpack made {debs}, not one .deb"]
        deb = os.path.join(d, debs[0])
        listing = subprocess.run(["dpkg-deb", "-c", deb], capture_output=True, text=True,
                                 check=True).stdout
        failures = [f"{debs[0]} lacks {p}" for p in
                    ("./usr/share/man/man1/ehprof.1.gz", "./usr/share/bash-completion/completions/ehprof",
                     "./usr/bin/ehprof") if not re.search(re.escape(p) + r"$", listing, re.M)]
        if failures:
            return failures
        tree = os.path.join(d, "tree")
        subprocess.run(["dpkg-deb", "-x", deb, tree], check=True)
        with gzip.open(os.path.join(tree, "usr/share/man/man1/ehprof.1.gz"), "rb") as f:
            packaged = f.read()
        with open(man_page, "rb") as f:
            if packaged != f.read():
                return [f"{debs[0]}'s ehprof.1.gz is not {man_page}"]
        return []


def main():
    if len(sys.argv) not in (3, 5) or (len(sys.argv) == 5 and sys.argv[3] != "--deb"):
        sys.exit(__doc__)
    ehprof, man_page = sys.argv[1:3]
    if not os.path.exists(man_page):
        sys.exit(f"man_page_test: no {man_page}: is help2man installed (scripts/install_deps.sh)?")
    commands, failures = check_help(ehprof, render(man_page))
    if len(sys.argv) == 5:
        failures += check_deb(sys.argv[4], man_page)
    for f in failures:
        print(f"man_page_test: {f}")
    if failures:
        return 1
    print(f"man_page_test: ehprof --help and its {len(commands)} commands' ({', '.join(commands)}) "
          f"stand in {man_page}" + (", and the .deb holds it" if len(sys.argv) == 5 else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
