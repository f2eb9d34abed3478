#!/usr/bin/env python3
"""JavaScript self shares: ehprof (V8's heap, no flags) against V8's own
profiler on the same node process.

Runs testdata/nodenames.js under `node --cpu-prof` (V8's sampling
profiler, 1 ms interval, writing a .cpuprofile at exit) and, while it
runs, `ehprof record -p PID -F HZ` for the middle of its run. Self share
per function: V8's hitCount of each profile node, by function name, over
all hits but "(idle)"; ehprof's leaf-most JavaScript frame of each sample
of node's main thread ("(program)" when the sample has none). Reports the
ten functions of the script V8 names hottest and the difference of their
shares, with TurboFan's inlining on (the default: ehprof names the
function whose frame is on the stack, V8 the inlined function at the pc)
and off (--no-turbo-inlining: every function has its own frame). Needs
root. Writes bench/results/node_vs_cpuprof.json.
"""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import result_file  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SCRIPT = os.path.join(ROOT, "testdata", "nodenames.js")


def cpuprofile_self(path):
    prof = json.load(open(path))
    hits = collections.Counter()
    for node in prof["nodes"]:
        name = node["callFrame"]["functionName"] or "(anonymous)"
        if name != "(idle)":
            hits[name] += node.get("hitCount", 0)
    return hits


def ehprof_self(path, tid):
    hits = collections.Counter()
    for block in open(path).read().split("\n\n"):
        lines = block.strip().split("\n")
        if not lines or not lines[0].strip() or int(lines[0].split()[1]) != tid:
            continue
        leaf = "(program)"
        for frame in lines[1:]:
            m = re.match(r"\s*[0-9a-f]+ (.*) \((.*)\)$", frame)
            if m and (m.group(2).endswith(".js") or m.group(2).startswith("node:")):
                leaf = m.group(1)
                break
        hits[leaf] += 1
    return hits


def run(ehprof, node_args, seconds, hz, tmp):
    profdir = tempfile.mkdtemp(dir=tmp)
    node = subprocess.Popen(["node", "--cpu-prof", f"--cpu-prof-dir={profdir}", "--cpu-prof-interval=1000",
                             *node_args, SCRIPT, str(seconds)])
    time.sleep(1.0)
    out = os.path.join(profdir, "ehprof.perf")
    subprocess.run([ehprof, "record", "-p", str(node.pid), "-F", str(hz), "-d", str(seconds - 2), "-q", "-o", out],
                   check=True, timeout=seconds + 60)
    node.wait(timeout=seconds + 60)
    return cpuprofile_self(glob.glob(os.path.join(profdir, "*.cpuprofile"))[0]), ehprof_self(out, node.pid)


def compare(v8, ours, top):
    v8_total, our_total = sum(v8.values()), sum(ours.values())
    rows = []
    for name, _ in v8.most_common():
        if name.startswith("("):
            continue
        rows.append((name, 100.0 * v8[name] / v8_total, 100.0 * ours[name] / our_total))
        if len(rows) == top:
            break
    return rows, our_total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--seconds", type=int, default=12)
    ap.add_argument("--hz", type=int, default=499)
    args = ap.parse_args()
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for label, node_args in (("inlining", []), ("no_inlining", ["--no-turbo-inlining"])):
            v8, ours = run(args.ehprof, node_args, args.seconds, args.hz, tmp)
            rows, samples = compare(v8, ours, 10)
            print(f"{label}: {samples} ehprof samples of node's main thread; self shares, V8 vs ehprof")
            for name, a, b in rows:
                print(f"  {name:16s} {a:6.1f} {b:6.1f}  {b - a:+6.1f}")
            figures[f"{label}_max_diff_points"] = round(max(abs(b - a) for _, a, b in rows), 1)
            figures[f"{label}_samples"] = samples
            for name, a, b in rows:
                figures[f"{label}_{name}_v8_pct"] = round(a, 1)
                figures[f"{label}_{name}_ehprof_pct"] = round(b, 1)
    result_file.write("node_vs_cpuprof", figures,
                      note="testdata/nodenames.js on node 20; top-10 self shares of V8's --cpu-prof and ehprof record -p")


if __name__ == "__main__":
    main()
