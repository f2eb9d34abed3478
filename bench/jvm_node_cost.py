#!/usr/bin/env python3
"""BPF time per sample of a JVM walk and of a node walk, against a native
program whose stacks are as deep; and the agent's memory for a JVM's
metadata.

Workloads, each recursing to a fixed depth (--depth) and spinning at the
bottom, in rounds (the recursion gets hot and compiled):
  java    testdata/JvmDeep.java (JDK 17 unless --jdk), no flags
  node    testdata/nodedeep.js, no flags
  native  testdata/deep_recursion (-O2 -fomit-frame-pointer), its depth
          chosen so that its samples have as many user frames as the
          median sample of the java (native_java) or node (native_node) run
Each run: the workload starts, after --warm seconds `ehprof record -p PID
-F HZ -d SECONDS` records it; the figure is ehprof's own per-sample BPF
time (the sampler's clock, median over the run's samples, as
bench/python_cost.py reads it). Runs interleave (a different order each
repetition); figures are medians over --reps. User frames per sample are
counted in the run's perf-script output (frames the walk stepped through:
not kernel frames, not the JIT's inlined methods nor JavaScript names,
which user space adds; median over the samples of the spinning thread).

JVM metadata: the `JVM metadata` line of record's summary (JvmTracker's
own accounting: the method table with its strings, the line tables, the
per-JVM caches of Method* and of inlining scopes), for the java runs and
for `javac` compiling testdata's Java sources (a real program: thousands
of JDK methods run), per JVM.

Needs root, a JDK and node. The machine is shared: the load average is
in the result file. Writes bench/results/jvm_node_cost.json.
  python3 bench/jvm_node_cost.py [--reps 3] [--seconds 3]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bpf_time  # noqa: E402
import result_file  # noqa: E402

WORKLOAD_LEAF = {"java": "JvmDeep.spin", "node": "spin", "native": "recurse_leaf"}


def user_frames(perf_script, leaf, js_words):
    """Median user frames of the samples whose stack holds `leaf`, and how
    many such samples there were. js_words: a JavaScript function's name
    comes as a word of its own after its frame's pc (its "file" the
    script, node:..., or [v8]): not a frame walked, not counted."""
    depths, frames, seen = [], 0, False
    with open(perf_script) as f:
        for line in f:
            if not line.strip():
                if seen:
                    depths.append(frames)
                frames, seen = 0, False
            elif line[0] in " \t":
                dso = line.rstrip()[line.rfind(" (") + 2:-1]
                word = js_words and (".js" in dso or dso.startswith("node:") or dso == "[v8]")
                frames += dso not in ("[kernel.kallsyms]", "inlined") and not word
                seen = seen or f" {leaf} " in line or f" {leaf}_" in line
    if seen:
        depths.append(frames)
    return (statistics.median(depths) if depths else 0), len(depths)


def run(args, name, cmd, tmp):
    """Starts cmd, records it after the warm-up: (BPF us, user frames,
    samples of the workload thread, JVM metadata)."""
    work = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(args.warm)
        out = os.path.join(tmp, f"{name}.perf")
        err = subprocess.run([args.ehprof, "record", "-p", str(work.pid), "-F", str(args.hz), "-d",
                              str(args.seconds), "-o", out], capture_output=True, text=True, check=True,
                             timeout=120).stderr
    finally:
        work.kill()
        work.wait()
    frames, samples = user_frames(out, WORKLOAD_LEAF[name.split("_")[0]], name == "node")
    return bpf_time.bpf_us(err), frames, samples, bpf_time.jvm_metadata(err)


def javac_metadata(args, tmp):
    """The JVM metadata of javac compiling testdata's Java sources."""
    sources = sorted(os.path.join(ROOT, "testdata", f) for f in os.listdir(os.path.join(ROOT, "testdata"))
                     if f.endswith(".java"))
    out = os.path.join(tmp, "javac.folded")
    err = subprocess.run([args.ehprof, "record", "-F", "999", "-o", out, "--",
                          os.path.join(args.jdk, "bin", "javac"), "-d", os.path.join(tmp, "javac")] + sources,
                         capture_output=True, text=True, check=True, timeout=300).stderr
    return bpf_time.jvm_metadata(err)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--jdk", default="/usr/lib/jvm/java-17-openjdk-amd64")
    ap.add_argument("--node", default=shutil.which("node") or "/usr/bin/node")
    ap.add_argument("--depth", type=int, default=100, help="Java and JavaScript recursion depth")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--warm", type=float, default=2.5)
    ap.add_argument("--hz", type=int, default=499)
    ap.add_argument("--reps", type=int, default=3)
    result_file.add_argument(ap, "jvm_node_cost")
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="jvm_node_cost.")
    try:
        subprocess.run([os.path.join(args.jdk, "bin", "javac"), "-d", tmp,
                        os.path.join(ROOT, "testdata", "JvmDeep.java")], check=True)
        life = str(args.warm + args.seconds + 5)
        native = os.path.join(ROOT, "build", "testdata", "deep_recursion")
        cmds = {"java": [os.path.join(args.jdk, "bin", "java"), "-cp", tmp, "JvmDeep", life, str(args.depth)],
                "node": [args.node, os.path.join(ROOT, "testdata", "nodedeep.js"), life, str(args.depth)]}
        # The native depths: deep_recursion's samples have depth + 6 user
        # frames (recurse x depth+1, recurse_leaf, main, libc's two, _start).
        for rt in ("java", "node"):
            _, frames, _, _ = run(args, rt, cmds[rt], tmp)
            cmds[f"native_{rt}"] = [native, life, str(max(0, int(frames) - 6))]
        results = {n: [] for n in cmds}
        names = list(cmds)
        for rep in range(args.reps):
            for n in names[rep % len(names):] + names[:rep % len(names)]:
                results[n].append(run(args, n, cmds[n], tmp))
        figures = report(args, results, javac_metadata(args, tmp))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if not args.no_result:
        result_file.write("jvm_node_cost", figures, args.note, args.result)


def report(args, results, javac):
    med = statistics.median
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.2f}; "
          f"median of {args.reps} interleaved runs, {args.hz} Hz, recursion depth {args.depth}")
    print(f"{'workload':12} {'BPF us':>7} {'frames':>7} {'samples':>8}")
    figures = {"depth": args.depth, "hz": args.hz, "reps": args.reps}
    for n, rs in results.items():
        us, frames, samples = med(r[0] for r in rs), med(r[1] for r in rs), med(r[2] for r in rs)
        print(f"{n:12} {us:7.2f} {frames:7.0f} {samples:8.0f}")
        figures.update({f"{n}_bpf_us": round(us, 2), f"{n}_user_frames": frames, f"{n}_samples": samples})
    for rt in ("java", "node"):
        ratio = figures[f"{rt}_bpf_us"] / figures[f"native_{rt}_bpf_us"]
        figures[f"{rt}_vs_native_ratio"] = round(ratio, 2)
        print(f"{rt} / native of the same depth: {ratio:.2f}x")
    java_meta = [r[3] for r in results["java"] if r[3]]
    if java_meta:
        figures["java_metadata_kb_per_jvm"] = round(med(m["total_kb"] / m["live_jvms"] for m in java_meta), 1)
        figures["java_methods_named"] = med(m["methods"] for m in java_meta)
    for k, v in javac.items():
        figures[f"javac_{k}"] = v
    if javac:
        figures["javac_metadata_kb_per_jvm"] = round(javac["total_kb"] / javac["jvms"], 1)  # caches gone at exit
        print(f"JVM metadata: JvmDeep {figures.get('java_metadata_kb_per_jvm')} KB per JVM; javac "
              f"{figures['javac_metadata_kb_per_jvm']} KB per JVM ({javac['methods']:.0f} methods: method table "
              f"{javac['method_table_kb']} KB, line tables {javac['line_tables_kb']} KB, method caches "
              f"{javac['method_caches_kb']} KB, inlining scopes {javac['scopes_kb']} KB)")
    return figures


if __name__ == "__main__":
    main()
