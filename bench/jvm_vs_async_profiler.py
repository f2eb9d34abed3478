#!/usr/bin/env python3
"""ehprof's Java frames against async-profiler, on the same JVM at once.

For each JDK present (Debian's 17, Temurin 25, and with --jdk21 Debian 13's
openjdk-21 in a root made by scripts/debian_root.sh), starts
testdata/JvmHot.java (ten hot methods in three threads: inlining, an
interface call, recursion, a double % ending in libm's fmod) with no
PreserveFramePointer and no perf map; async-profiler 4.1
(scripts/install_async_profiler.sh) is loaded at start-up as an agent
(-agentpath with no options: its JVMTI hooks, which make the JIT keep
debug info for every pc, are there from the first compile). After the
warm-up, ehprof starts on the JVM,
  ehprof record -p PID -F 999 -o ehprof.folded
then async-profiler, by `jcmd PID JVMTI.agent_load SO
start,event=cpu,interval=1ms,threads`, stopped SECONDS later with
`stop,file=...,collapsed`; ehprof is ended (SIGINT) after that stop, and
judged on its samples between the two jcmd's returns alone (its
perf-script output has each sample's time): the JIT may still be changing
the code then (under load, JDK 25's C2 compiles JvmHot.dataLoop with
matMul and sieve inlined 11 s after the start), and ehprof's extra second
before async-profiler's start shifted hot-data's shares by up to 8 points.
event=cpu (a perf_events cpu-clock timer per thread, the clock ehprof
samples by) at 1 ms: with event=itimer,interval=5ms (one process-wide
timer) async-profiler had about 150 samples a second on this 2-CPU VM,
with cpu,1ms about 700, and a share measured on n samples has a standard
error of sqrt(p(1-p)/n): 2.6 points for 30 % on 300 samples, too coarse
for a 3-point agreement.

Figures, per JDK, each the median over the runs (runs interleave the JDKs):
  shares      per thread, the percent of its samples whose deepest JvmHot
              frame is each method; max |diff| over async-profiler's ten
              hottest, and the same without JvmHot.fmodLoop (whose samples
              async-profiler loses: below); also over all runs' samples
              pooled (not a median), with the standard error sampling
              alone gives that difference
  chains      overlap of the multisets of Java caller chains (JvmHot
              frames root to leaf, per thread), bench/jvm_profiles.py;
              also over the samples not in libm's fmod alone (JDK 17:
              async-profiler has no Java frame for any of those);
              also with JFR's (a second opinion, for stacks only: it
              samples few threads a period), recorded inside the same
              window (jcmd JFR.start settings=profile; `jfr print --json
              --stack-depth 64 --events jdk.ExecutionSample`), for ehprof and for
              async-profiler itself; and async-profiler's chains against
              its own previous run's (the overlap sampling noise leaves)
  with Java   percent of the three threads' samples carrying a JvmHot frame
  start       percent of ehprof's samples reaching the thread's start
              (start_thread, or HotSpot's thread_native_entry below it)
  fmod        of hot-arith's samples: async-profiler's whose leaf is libm's
              fmod with no Java frame ([unknown_Java]), ehprof's whose leaf
              is fmod under JvmHot.fmodLoop (JDK 17; JDK 21 and 25 have
              their own fmod code, which async-profiler walks)
Needs root, a JDK, and mvn for the install script.
"""
import argparse
import copy
import math
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import jvm_profiles  # noqa: E402
import jvm_runs  # noqa: E402
import result_file  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_figures(paths):
    """The figures of one run, from its profiles; and async-profiler's."""
    ap = jvm_profiles.Profile(paths["asprof"], "asprof")
    eh = jvm_profiles.Profile(paths["ehprof_perf"], "ehprof_perf", paths["window"])
    f = {"asprof_samples": ap.total(), "ehprof_samples": eh.total(),
         "chain_overlap_pct": jvm_profiles.chain_overlap(ap, eh),
         "chain_overlap_no_fmod_pct": jvm_profiles.chain_overlap(ap, eh, "chains_no_fmod"),
         "asprof_with_java_pct": ap.pct(ap.with_java), "ehprof_with_java_pct": eh.pct(eh.with_java),
         "ehprof_reach_start_pct": eh.pct(eh.reach_start),
         "asprof_fmod_unnamed_pct": ap.thread_pct(ap.fmod_leaf, "hot-arith")
         - ap.thread_pct(ap.fmod_named, "hot-arith"),
         "ehprof_fmod_named_pct": eh.thread_pct(eh.fmod_named, "hot-arith")}
    if "jfr" in paths:
        jfr = jvm_profiles.Profile(paths["jfr"], "jfr")
        f.update({"jfr_samples": jfr.total(), "jfr_chain_overlap_pct": jvm_profiles.chain_overlap(jfr, eh),
                  "asprof_jfr_chain_overlap_pct": jvm_profiles.chain_overlap(jfr, ap)})
    f["max_diff_points"], f["max_diff_points_no_fmod"], _ = max_diffs(ap, eh)
    keys = {k for k in list(ap.deepest) + list(eh.deepest)}
    for thread, method in keys | {(t, m) for t, ms in jvm_profiles.HOT.items() for m in ms}:
        name = method_key(thread, method)
        f[f"asprof_{name}_pct"] = ap.share(thread, method)
        f[f"ehprof_{name}_pct"] = eh.share(thread, method)
    return f, ap, eh


def max_diffs(ap, eh):
    """The largest |difference| in share over async-profiler's ten hottest
    (thread, method), the same without JvmHot.fmodLoop, and the standard
    error sampling gives that difference: sqrt(p(1-p)/n) for each profile's
    share p of its n samples of the thread."""
    diffs = {k: abs(ap.share(*k) - eh.share(*k)) for k in jvm_profiles.hottest(ap)}
    if not diffs:
        return 0.0, 0.0, 0.0
    worst = max(diffs, key=diffs.get)
    se = math.sqrt(sum(p.share(*worst) * (100 - p.share(*worst)) / p.samples[worst[0]] for p in (ap, eh)))
    return (diffs[worst], max((d for k, d in diffs.items() if k[1] != "JvmHot.fmodLoop"), default=0.0), se)


def method_key(thread, method):
    """hot_arith_hashMix, hot_virtual_Square_area, hot_arith_no_java."""
    short = "no_java" if method == jvm_profiles.NO_JAVA else method[len("JvmHot."):]
    short = short.replace("$", "_").replace(".", "_")
    return thread.replace("-", "_") + "_" + short


def medians(runs):
    keys = sorted({k for r in runs for k in r})
    return {k: statistics.median(r.get(k, 0.0) for r in runs) for k in keys}


def print_jdk(label, version, m, reps):
    print(f"\n{label}: {version} (median of {reps} runs; async-profiler "
          f"{m['asprof_samples']:.0f}, ehprof {m['ehprof_samples']:.0f} samples a run)")
    print(f"  {'thread':12} {'deepest JvmHot method':24} {'async-prof':>10} {'ehprof':>8} {'|diff|':>7}")
    for thread in jvm_profiles.THREADS:
        prefix = thread.replace("-", "_") + "_"
        rows = [(k[len("asprof_") + len(prefix):-len("_pct")], m[k], m.get("ehprof_" + k[len("asprof_"):], 0.0))
                for k in m if k.startswith("asprof_" + prefix)]
        for name, a, e in sorted(rows, key=lambda r: -r[1]):
            if max(a, e) >= 0.5:
                print(f"  {thread:12} {name:24} {a:9.1f}% {e:7.1f}% {abs(a - e):7.1f}")
    print(f"  max |diff| over async-profiler's ten hottest: {m['max_diff_points']:.1f} points "
          f"({m['max_diff_points_no_fmod']:.1f} without fmodLoop); of the runs' samples pooled "
          f"{m['max_diff_points_pooled']:.1f} (its sampling standard error {m['max_diff_se_points_pooled']:.1f})")
    print(f"  Java caller chains overlap with async-profiler: {m['chain_overlap_pct']:.1f} % "
          f"({m['chain_overlap_no_fmod_pct']:.1f} % of the samples not in libm's fmod)")
    if "asprof_rerun_chain_overlap_pct" in m:
        print(f"  async-profiler's own runs, one against the next: {m['asprof_rerun_chain_overlap_pct']:.1f} %")
    if "jfr_chain_overlap_pct" in m:
        print(f"  with JFR ({m['jfr_samples']:.0f} samples a run): ehprof {m['jfr_chain_overlap_pct']:.1f} %, "
              f"async-profiler {m['asprof_jfr_chain_overlap_pct']:.1f} %")
    print(f"  samples with a JvmHot frame: async-profiler {m['asprof_with_java_pct']:.1f} %, "
          f"ehprof {m['ehprof_with_java_pct']:.1f} %")
    print(f"  ehprof samples reaching start_thread/thread_native_entry: {m['ehprof_reach_start_pct']:.1f} %")
    print(f"  hot-arith in libm's fmod: async-profiler without a Java frame {m['asprof_fmod_unnamed_pct']:.1f} %, "
          f"ehprof under JvmHot.fmodLoop {m['ehprof_fmod_named_pct']:.1f} %")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"), help="default: %(default)s")
    ap.add_argument("--jdk", action="append", help="a JDK home (repeatable; default: those present)")
    ap.add_argument("--jdk21", action="store_true",
                    help="also Debian 13's openjdk-21, in a root scripts/debian_root.sh makes (cached)")
    ap.add_argument("--seconds", type=float, default=10, help="profiled time a run")
    # The outer loops iterate slowly, so the JIT compiles them late: with
    # four other jobs on the 2 CPUs, -XX:+PrintCompilation (JDK 25) shows
    # dataLoop's C2 OSR compile, which inlines matMul and sieve and moves
    # their shares, at 6.9 s (11.5 s in another run).
    ap.add_argument("--warmup", type=float, default=12, help="seconds before profiling (JIT compiles)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--hz", type=int, default=999, help="ehprof's -F")
    ap.add_argument("--asprof-event", default="cpu,interval=1ms",
                    help="async-profiler's event and interval (default: %(default)s)")
    ap.add_argument("--no-jfr", action="store_true", help="no JFR recording beside async-profiler")
    ap.add_argument("--keep", help="keep each run's profiles in this folder")
    ap.add_argument("--quick", action="store_true", help="one JDK, one run, 3 s after 3 s of warm-up")
    result_file.add_argument(ap, "jvm_vs_async_profiler")
    args = ap.parse_args()
    if args.quick:
        args.reps, args.seconds, args.warmup = 1, 3, 3
    so = subprocess.run(["bash", os.path.join(ROOT, "scripts", "install_async_profiler.sh")],
                        capture_output=True, text=True, check=True).stdout.strip()
    with tempfile.TemporaryDirectory(prefix="ehprof-jvm-ref.") as tmp:
        jdks = jvm_runs.find_jdks(args.jdk, args.jdk21, tmp, so)
        if not jdks:
            sys.exit("jvm_vs_async_profiler.py: no JDK found (apt-get install default-jdk-headless)")
        try:
            if args.quick:
                for jdk in jdks[1:]:
                    jdk.close()
                jdks = jdks[:1]
            print(f"# {platform.node()} {platform.release()} {os.cpu_count()} CPUs, "
                  f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.seconds:g} s a run after "
                  f"{args.warmup:g} s of warm-up; ehprof -F {args.hz}, async-profiler {args.asprof_event}")
            runs = {j.label: [] for j in jdks}
            # async-profiler against its own previous run: the overlap two
            # runs of one profiler reach, the floor sampling leaves.
            rerun = {j.label: [] for j in jdks}
            previous = {}
            # Each profiler's samples of all runs together, for the shares'
            # difference with sqrt(reps) less sampling noise.
            pooled = {}
            for rep in range(args.reps):
                for jdk in jdks:
                    f, ap_profile, eh_profile = run_figures(jvm_runs.run_once(jdk, args, rep))
                    runs[jdk.label].append(f)
                    if jdk.label in pooled:
                        pooled[jdk.label][0].merge(ap_profile)
                        pooled[jdk.label][1].merge(eh_profile)
                    else:
                        pooled[jdk.label] = (copy.deepcopy(ap_profile), copy.deepcopy(eh_profile))
                    if jdk.label in previous:
                        rerun[jdk.label].append(jvm_profiles.chain_overlap(previous[jdk.label], ap_profile))
                    previous[jdk.label] = ap_profile
            figures = {}
            for jdk in jdks:
                m = medians(runs[jdk.label])
                if rerun[jdk.label]:
                    m["asprof_rerun_chain_overlap_pct"] = statistics.median(rerun[jdk.label])
                m["max_diff_points_pooled"], _, m["max_diff_se_points_pooled"] = max_diffs(*pooled[jdk.label])
                print_jdk(jdk.label, jdk.version, m, args.reps)
                figures.update({f"{jdk.label}_{k}": round(v, 2) for k, v in m.items()})
        finally:
            for jdk in jdks:
                jdk.close()
    if not args.no_result:
        result_file.write("jvm_vs_async_profiler", figures, args.note, args.result)


if __name__ == "__main__":
    main()
