#!/usr/bin/env python3
"""ehprof record against perf record --call-graph dwarf, in one run.

Runs the same workload (default: fio with ../shared/eval/fio-null.job) under
  ehprof record -F HZ --format perf-script
  perf record -F HZ --call-graph dwarf,65528   (twice: the reference pair)
and reports, per tool: samples, complete / call-site / agree (judged by
../shared/eval/stackcheck.py against the perf references), BPF time per
sample (ehprof: median/p90/p99 from the program's own clock, and the mean
from kernel.bpf_stats_enabled), bytes per sample (ehprof: through the ring
buffer; perf: perf.data size / samples) and the profiler's own CPU share.
Needs root. Ratios are what to quote; absolute times on a shared VM are noisy.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.path.join(ROOT, "..", "shared")


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def stackcheck(dump, ref, comm):
    cmd = [sys.executable, os.path.join(SHARED, "eval", "stackcheck.py"), dump, "--json"]
    if ref:
        cmd += ["--ref", ref]
    if comm:
        cmd += ["--comm", comm]
    return json.loads(sh(cmd).stdout)


def perf_run(tmp, name, hz, workload):
    data = os.path.join(tmp, name + ".data")
    txt = os.path.join(tmp, name + ".txt")
    r = sh(["perf", "record", "-q", "-F", str(hz), "--call-graph", "dwarf,65528", "-o", data, "--"]
           + workload)
    if r.returncode != 0:
        raise RuntimeError("perf record failed: " + r.stderr[-500:])
    with open(txt, "w") as out:
        subprocess.run(["perf", "script", "--no-inline", "-i", data, "-F", "comm,tid,ip,sym,dso"],
                       stdout=out, stderr=subprocess.DEVNULL, check=True)
    return data, txt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("-F", type=int, default=999)
    ap.add_argument("--comm", default="fio")
    ap.add_argument("--runs", type=int, default=1, help="ehprof runs")
    ap.add_argument("workload", nargs="*",
                    default=["fio", os.path.join(SHARED, "eval", "fio-null.job")])
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="ehprof-vs-perf-")
    _, ref1 = perf_run(tmp, "perf1", a.F, a.workload)
    data2, ref2 = perf_run(tmp, "perf2", a.F, a.workload)
    p = stackcheck(ref1, ref2, a.comm)
    perf_samples = stackcheck(ref2, None, None)["samples"]
    perf_bytes = os.path.getsize(data2) / max(1, perf_samples)
    print(f"perf dwarf,65528: samples={p['samples']} complete={p['complete_pct']}% "
          f"callsite={p['callsite_pct']}% agree(perf vs perf)={p['agree_pct']}% "
          f"bytes/sample={perf_bytes:.0f}")
    old = sh(["sysctl", "-n", "kernel.bpf_stats_enabled"]).stdout.strip() or "0"
    sh(["sysctl", "-w", "kernel.bpf_stats_enabled=1"])
    try:
        for i in range(a.runs):
            out = os.path.join(tmp, f"ehprof{i}.txt")
            r = sh([a.ehprof, "record", "-q", "-F", str(a.F), "--format", "perf-script", "-o", out,
                    "--"] + a.workload)
            if r.returncode != 0:
                print(r.stderr[-2000:])
                raise RuntimeError("ehprof record failed")
            s1 = stackcheck(out, ref1, a.comm)
            s2 = stackcheck(out, ref2, a.comm)
            summary = " ".join(l for l in r.stderr.splitlines() if l.startswith("ehprof:"))
            bpf = re.search(r"median ([\d.]+) us, p90 ([\d.]+) us, p99 ([\d.]+) us; (\d+) bytes", summary)
            mean = re.search(r"mean ([\d.]+) us over", summary)
            cpu = re.search(r"own CPU time while recording ([\d.]+)%", summary)
            print(f"ehprof run {i}: samples={s1['samples']} complete={s1['complete_pct']}% "
                  f"callsite={s1['callsite_pct']}% agree={s1['agree_pct']}%/{s2['agree_pct']}% "
                  f"bpf_median_us={bpf.group(1) if bpf else '?'} p90={bpf.group(2) if bpf else '?'} "
                  f"p99={bpf.group(3) if bpf else '?'} bpf_stats_mean_us={mean.group(1) if mean else '?'} "
                  f"bytes/sample={bpf.group(4) if bpf else '?'} own_cpu={cpu.group(1) if cpu else '?'}%")
            if bpf:
                print(f"  bytes per sample: perf/ehprof = {perf_bytes / float(bpf.group(4)):.0f}x")
    finally:
        sh(["sysctl", "-w", f"kernel.bpf_stats_enabled={old}"])


if __name__ == "__main__":
    main()
