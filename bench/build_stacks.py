#!/usr/bin/env python3
"""Stacks of a real build (issue 13, item 3): `make -j2` of this project's
unwind_tables library from a clean build directory, recorded with ehprof,
judged per command by stackcheck (../shared/eval/stackcheck.py): make, sh,
cc1plus, as and the rest are mostly short-lived exec'd processes, the case
the kernel-side mappings (fork, exec, mmap) are for.

  python3 bench/build_stacks.py                 # default, --no-kernel-maps, --no-table-cache
  python3 bench/build_stacks.py --modes on      # only the default
  python3 bench/build_stacks.py --gpp           # one g++ -O2 compile: cold, then 2 warm

--gpp records `g++ -O2 -c` of a small C++ file (iostream, map, regex):
first with --no-table-cache (every table built while g++ runs, no exec
hints), then twice with the table cache (which also remembers what the
command exec'd: cc1plus, as), and prints ehprof's and stackcheck's figures:
complete %, the tables loaded and how many came from the cache, and
ehprof's own CPU while recording (its summary).

Writes bench/results/build_stacks.json (make: MODE_COMM_complete_pct and
MODE_COMM_samples as bench/user_stacks.py judges them: the samples with a
user stack, complete by stackcheck or ending in ld.so's _start, which has no
CFI; MODE_COMM_stackcheck_pct, stackcheck's alone; COMM "all" for the whole
run, "lived5ms" for the processes sampled over 5 ms or more)
or, with --gpp, bench/results/build_stacks_gpp.json (RUN_complete_pct,
RUN_tables_loaded, RUN_tables_from_cache, RUN_own_cpu_pct; RUN cold, warm1,
warm2).

Each mode configures a fresh build tree in a temporary directory (cmake,
not recorded), then records `make -j2 unwind_tables` in it. Prints, per
mode, the whole run's complete % and the main commands' own.
"""
import argparse
import re
import os
import shutil
import subprocess
import sys
import tempfile

import result_file
import stackcheck_json
import user_stacks
from stackcheck_json import stackcheck

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COMMS = ("make", "sh", "cc1plus", "as", "g++", "cmake", "ar", "ranlib")
MODES = {"on": [], "off": ["--no-kernel-maps"], "cold": ["--no-table-cache"]}



def lived(all_samples, ms=5.0):
    """The samples of processes sampled over at least `ms` milliseconds
    (first to last sample: each lived that long at least)."""
    span = {}
    for x in all_samples:
        lo, hi = span.get(x.pid, (x.time, x.time))
        span[x.pid] = (min(lo, x.time), max(hi, x.time))
    return [x for x in all_samples if span[x.pid][1] - span[x.pid][0] >= ms / 1000]


def configure(tree):
    env = dict(os.environ, CC="gcc", CXX="g++")
    subprocess.run(["cmake", "-S", ROOT, "-B", tree, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"],
                   check=True, capture_output=True, env=env)


def record(ehprof, tree, extra, out):
    cmd = [ehprof, "record", "-F", "999", "-q", "--show-stops", "--format", "perf-script", "-o", out, *extra,
           "--", "make", "-j2", "-C", tree, "unwind_tables"]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"ehprof record failed ({r.returncode}): {r.stderr[-2000:]}")


def run_mode(ehprof, mode, keep):
    tree = tempfile.mkdtemp(prefix=f"ehprof-build-{mode}-")
    try:
        configure(tree)
        out = os.path.join(keep or tree, f"build-{mode}.perf-script")
        record(ehprof, tree, MODES[mode], out)
        all_samples = list(user_stacks.samples(out))
        whole = user_stacks.judge(all_samples)
        whole["lived_5ms"] = user_stacks.judge(lived(all_samples))
        per = {c: user_stacks.judge(x for x in all_samples if x.comm == c) for c in COMMS}
        return whole, per
    finally:
        shutil.rmtree(tree, ignore_errors=True)


GPP_SOURCE = """#include <iostream>
#include <map>
#include <regex>
#include <string>
#include <vector>
int main(int argc, char** argv) {
  std::map<std::string, std::vector<int>> m;
  std::regex re(argc > 1 ? argv[1] : "a+b");
  for (int i = 0; i < argc; ++i) m[argv[i]].push_back(i);
  std::cout << std::regex_match("aab", re) << m.size() << "\\n";
}
"""


def run_gpp(ehprof):
    figures = {}
    work = tempfile.mkdtemp(prefix="ehprof-gpp-")
    try:
        src = os.path.join(work, "t.cc")
        with open(src, "w") as f:
            f.write(GPP_SOURCE)
        for name, extra in (("cold", ["--no-table-cache"]), ("warm 1", []), ("warm 2", [])):
            out = os.path.join(work, "gpp.perf-script")
            cmd = [ehprof, "record", "-F", "999", "--format", "perf-script", "-o", out, *extra,
                   "--", "g++", "-O2", "-c", src, "-o", os.path.join(work, "t.o")]
            r = subprocess.run(cmd, capture_output=True, text=True)
            summary = next((l.split("ehprof: ", 1)[-1] for l in r.stderr.splitlines()
                            if "user stacks complete" in l), r.stderr[-300:])
            judged = stackcheck(out)
            print(f"g++ {name}: {line('all', judged).strip()}\n    ehprof: {summary}")
            tables = re.search(r"unwind tables: (\d+) loaded \((\d+) from the table cache\)", r.stderr)
            cpu = re.search(r"own CPU time while recording ([\d.]+)%", r.stderr)
            if r.returncode != 0 or not tables or not cpu:
                raise SystemExit(f"ehprof record of g++ failed or said no table/CPU figures: {r.stderr[-1500:]}")
            key = name.replace(" ", "")
            figures.update({f"{key}_complete_pct": judged.get("complete_pct", 0),
                            f"{key}_samples": judged.get("samples", 0),
                            f"{key}_tables_loaded": int(tables.group(1)),
                            f"{key}_tables_from_cache": int(tables.group(2)),
                            f"{key}_own_cpu_pct": float(cpu.group(1))})
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return figures


def line(name, r):
    return (f"  {name:10s} samples {r.get('user_samples', 0):6}  complete {r.get('user_complete_pct', 0):6.2f}%  "
            f"(stackcheck {r.get('stackcheck_pct', 0):6.2f}%, +{r.get('ends_at_entry_point', 0)} ending in an entry "
            f"routine without CFI; {sum(r.get('no_user_stack', {}).values())} without a user stack)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--modes", default="on,off,cold",
                    help="on (default), off (--no-kernel-maps), cold (--no-table-cache)")
    ap.add_argument("--keep", help="directory for the perf-script dumps")
    ap.add_argument("--gpp", action="store_true", help="a g++ compile instead of the make build")
    result_file.add_argument(ap, "build_stacks")
    args = ap.parse_args()
    stackcheck_json.require()
    if args.gpp:
        figures = run_gpp(args.ehprof)
        if not args.no_result:
            result = args.result.replace("build_stacks.json", "build_stacks_gpp.json")
            result_file.write("build_stacks_gpp", figures, args.note, result)
        return 0
    figures = {}
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
    for mode in args.modes.split(","):
        whole, per = run_mode(args.ehprof, mode, args.keep)
        print(f"{mode} ({' '.join(MODES[mode]) or 'default'}):")
        print(line("all", whole))
        print(line("lived>=5ms", whole["lived_5ms"]))
        for comm, r in [("all", whole), ("lived5ms", whole["lived_5ms"])] + list(per.items()):
            n = r.get("user_samples", 0)
            if not n:
                continue
            if comm not in ("all", "lived5ms"):
                print(line(comm, r))
            key = f"{mode}_{comm.replace('+', 'p')}"
            figures.update({f"{key}_samples": n, f"{key}_complete_pct": r["user_complete_pct"],
                            f"{key}_stackcheck_pct": r["stackcheck_pct"]})
    if not args.no_result:
        result_file.write("build_stacks", figures, args.note, args.result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
