#!/usr/bin/env python3
"""JavaScript self shares: ehprof (V8's heap, no flags) against V8's own
profiler on the same node process.

Runs testdata/nodebench.js (ten hot functions: one recursive, one that
deoptimises, one async) under `node --cpu-prof` (V8's sampling profiler,
1 ms interval, writing a .cpuprofile at exit) and, while it runs, `ehprof
record -p PID -F HZ --srcline` for the middle of its run, with TurboFan's
inlining on (the default) and off (--no-turbo-inlining). Two comparisons
of the ten functions of the script V8 names hottest:
- "self": V8's hitCount per profile node, by function name, counting only
  V8's samples inside ehprof's recording (both clocks are CLOCK_MONOTONIC),
  against ehprof's leaf-most JavaScript frame that is not an inlined one.
  V8 11.3's profiler gives a sample whose pc lies in code TurboFan inlined
  to the function that code was compiled for (its caller), so this is
  ehprof read V8's way.
- "lines": V8's positionTicks (the lines its samples ran, the lines of
  inlined functions included) given to the script function whose lines
  hold them, whole run, against ehprof's leaf-most JavaScript frame, a
  function TurboFan inlined included: who really ran.
Also the share of ehprof's samples whose stack reaches _start through
node::Start. --osr adds testdata/nodenames.js, whose one long call runs
on-stack-replaced code. Needs root. Writes
bench/results/node_vs_cpuprof.json.
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
BENCH_SCRIPT = os.path.join(ROOT, "testdata", "nodebench.js")
OSR_SCRIPT = os.path.join(ROOT, "testdata", "nodenames.js")


def cpuprofile_self(path, window):
    """V8's self hits per function name: by profile node within window
    (monotonic seconds), and by the script function holding each of its
    positionTicks' lines (whole run)."""
    prof = json.load(open(path))
    nodes = {n["id"]: n for n in prof["nodes"]}
    name = {i: n["callFrame"]["functionName"] or "(anonymous)" for i, n in nodes.items()}
    by_node = collections.Counter()
    at = prof["startTime"]
    for sample, delta in zip(prof["samples"], prof["timeDeltas"]):
        at += delta
        if window[0] <= at / 1e6 <= window[1] and name[sample] != "(idle)":
            by_node[name[sample]] += 1
    # Each script's functions by the line they start on (0-based there).
    starts = collections.defaultdict(dict)
    for n in nodes.values():
        cf = n["callFrame"]
        if cf["url"] and cf["lineNumber"] >= 0:
            starts[cf["url"]][cf["lineNumber"] + 1] = name[n["id"]]
    by_line = collections.Counter()
    for i, n in nodes.items():
        url = n["callFrame"]["url"]
        ticks = n.get("positionTicks")
        if not ticks or url not in starts:
            by_line[name[i]] += n.get("hitCount", 0) if name[i] != "(idle)" else 0
            continue
        for t in ticks:
            first = max((line for line in starts[url] if line <= t["line"]), default=None)
            by_line[starts[url][first] if first else name[i]] += t["ticks"]
    return by_node, by_line


def is_js(where):
    return where.endswith(".js") or where.endswith(".mjs") or where.startswith("node:")


def ehprof_self(path, tid):
    """Per sample of tid (perf-script with --srcline: a frame TurboFan
    inlined prints "(inlined)" for its dso, its script on the srcline
    under it): the leaf-most JavaScript frame that is not inlined, the
    leaf-most one at all, whether it reaches _start through node::Start;
    and the first and last sample's time."""
    physical, exact = collections.Counter(), collections.Counter()
    to_start = 0
    window = [float("inf"), 0.0]
    for block in open(path).read().split("\n\n"):
        lines = block.strip().split("\n")
        if not lines or not lines[0].strip() or int(lines[0].split()[1]) != tid:
            continue
        at = float(lines[0].split()[3].rstrip(":"))
        window = [min(window[0], at), max(window[1], at)]
        frames = []  # (symbol, dso, srcline file)
        for line in lines[1:]:
            m = re.match(r"\s*[0-9a-f]+ (.*) \((.*)\)$", line)
            if line.startswith("\t") and m:
                frames.append([m.group(1), m.group(2), ""])
            elif frames and line.startswith("  "):
                frames[-1][2] = line.strip().rsplit(":", 1)[0]
        physical[next((f[0] for f in frames if is_js(f[1])), "(program)")] += 1
        exact[next((f[0] for f in frames if is_js(f[1]) or (f[1] == "inlined" and is_js(f[2]))), "(program)")] += 1
        symbols = [f[0] for f in frames]
        start = symbols.index("_start") if "_start" in symbols else -1
        to_start += start >= 0 and any(sym.startswith("node::Start(") for sym in symbols[:start])
    return physical, exact, to_start, window


def run(ehprof, script, node_args, seconds, hz, tmp):
    profdir = tempfile.mkdtemp(dir=tmp)
    node = subprocess.Popen(["node", "--cpu-prof", f"--cpu-prof-dir={profdir}", "--cpu-prof-interval=1000",
                             *node_args, script, str(seconds)])
    time.sleep(1.0)
    out = os.path.join(profdir, "ehprof.perf")
    subprocess.run([ehprof, "record", "-p", str(node.pid), "-F", str(hz), "-d", str(seconds - 2), "-q", "--srcline",
                    "-o", out], check=True, timeout=seconds + 60)
    node.wait(timeout=seconds + 60)
    physical, exact, to_start, window = ehprof_self(out, node.pid)
    by_node, by_line = cpuprofile_self(glob.glob(os.path.join(profdir, "*.cpuprofile"))[0], window)
    return {"self": (by_node, physical), "lines": (by_line, exact)}, to_start


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
    ap.add_argument("--osr", action="store_true", help="also testdata/nodenames.js (on-stack replacement)")
    args = ap.parse_args()
    figures = {}
    runs = [("inlining", BENCH_SCRIPT, []), ("no_inlining", BENCH_SCRIPT, ["--no-turbo-inlining"])]
    if args.osr:
        runs.append(("osr_inlining", OSR_SCRIPT, []))
    with tempfile.TemporaryDirectory() as tmp:
        for label, script, node_args in runs:
            pairs, to_start = run(args.ehprof, script, node_args, args.seconds, args.hz, tmp)
            samples = sum(pairs["lines"][1].values())
            figures[f"{label}_samples"] = samples
            figures[f"{label}_to_start_pct"] = round(100.0 * to_start / samples, 1)
            print(f"{label} ({os.path.basename(script)}): {samples} ehprof samples of node's main thread, "
                  f"{100.0 * to_start / samples:.1f} % reach _start through node::Start")
            for kind, (v8, ours) in pairs.items():
                rows, _ = compare(v8, ours, 10)
                print(f"  {kind}: V8 vs ehprof")
                for name, a, b in rows:
                    print(f"    {name:16s} {a:6.1f} {b:6.1f}  {b - a:+6.1f}")
                figures[f"{label}_{kind}_max_diff_points"] = round(max(abs(b - a) for _, a, b in rows), 1)
                for name, a, b in rows:
                    figures[f"{label}_{kind}_{name}_v8_pct"] = round(a, 1)
                    figures[f"{label}_{kind}_{name}_ehprof_pct"] = round(b, 1)
    result_file.write("node_vs_cpuprof", figures,
                      note="testdata/nodebench.js (and with --osr testdata/nodenames.js) on node 20; top-10 self "
                           "shares of V8's --cpu-prof and ehprof record -p: self, V8's profile nodes in ehprof's "
                           "window vs ehprof's leaf-most frame not inlined; lines, V8's positionTicks by the "
                           "function holding the line vs ehprof's leaf-most frame; to_start: samples reaching "
                           "_start through node::Start")


if __name__ == "__main__":
    main()
