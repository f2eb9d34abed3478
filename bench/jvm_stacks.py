#!/usr/bin/env python3
"""Java stacks with and without -XX:+PreserveFramePointer.

testdata/JvmWork.java runs main -> work -> hotA / hotB (CPU-bound) for a
few seconds. It is compiled with the machine's javac and profiled with
ehprof record, its JIT code named from the perf map HotSpot writes at exit
(-XX:+UnlockDiagnosticVMOptions -XX:+DumpPerfMapAtExit; on a running JVM
`jcmd PID Compiler.perfmap` writes the same file). Runs alternate between
the two settings; per setting this prints the medians over the runs of:
  complete   share of the Java main thread's samples whose user stack
             reaches the thread's start (clone3 at the root)
  java chain share of the samples in hotA/hotB (or in work, with them
             inlined) whose stack holds every Java caller: main and work
             (each an "Interpreter" frame or a JvmWork.* JIT frame)
Needs root and a JDK (Debian: default-jdk-headless).
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import result_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def java_frame(f):
    return f == "Interpreter" or "JvmWork." in f


def judge(folded):
    main = complete = hot = chain = 0
    for line in open(folded):
        stack, n = line.rstrip("\n").rsplit(" ", 1)
        n = int(n)
        frames = stack.split(";")[1:]  # the comm first
        if "JavaMain" not in frames:
            continue
        main += n
        complete += n * (frames[0] == "clone3")
        java = [f for f in frames if java_frame(f)]
        if not java:
            continue
        leaf = java[-1]
        want = 3 if ("hotA" in leaf or "hotB" in leaf) else 2 if "work" in leaf else 0
        if want:
            hot += n
            chain += n * (len(java) >= want)
    return (100.0 * complete / main if main else 0.0, 100.0 * chain / hot if hot else 0.0, main)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=4)
    result_file.add_argument(ap, "jvm_stacks")
    args = ap.parse_args()
    if not shutil.which("javac"):
        sys.exit("jvm_stacks.py: no javac (apt-get install default-jdk-headless)")
    tmp = tempfile.mkdtemp(prefix="ehprof-jvm.")
    try:
        subprocess.run(["javac", "-d", tmp, os.path.join(ROOT, "testdata", "JvmWork.java")],
                       check=True)
        modes = {"-XX:-PreserveFramePointer": [], "-XX:+PreserveFramePointer": []}
        for run in range(args.runs):
            for mode, results in modes.items():
                out = os.path.join(tmp, "run.folded")
                subprocess.run([args.ehprof, "record", "-F", "499", "-q", "-o", out, "--", "java",
                                "-XX:+UnlockDiagnosticVMOptions", "-XX:+DumpPerfMapAtExit", mode,
                                "-cp", tmp, "JvmWork", str(args.seconds)],
                               check=True, stderr=subprocess.DEVNULL)
                results.append(judge(out))
        version = subprocess.run(["java", "-version"], capture_output=True, text=True).stderr
        print(version.splitlines()[0] if version else "java")
        figures = {}
        for mode, results in modes.items():
            c = statistics.median(r[0] for r in results)
            j = statistics.median(r[1] for r in results)
            s = statistics.median(r[2] for r in results)
            print(f"{mode}: complete {c:.1f} %, java chain {j:.1f} % "
                  f"(median of {len(results)} runs, {s:.0f} main-thread samples a run)")
            key = "pfp" if mode.startswith("-XX:+") else "nopfp"
            figures.update({f"{key}_complete_pct": round(c, 1), f"{key}_java_chain_pct": round(j, 1),
                            f"{key}_main_samples": round(s)})
        if not args.no_result:
            result_file.write("jvm_stacks", figures, args.note, args.result)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
