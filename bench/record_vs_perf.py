#!/usr/bin/env python3
"""ehprof record against perf record --call-graph dwarf, in one run.

Runs the same workload (default: fio with ../shared/eval/fio-null.job) under
  ehprof record -F HZ --format perf-script
  perf record -F HZ --call-graph dwarf,65528   (twice: the reference pair)
and reports, per tool: samples, complete / call-site / agree (judged by
../shared/eval/stackcheck.py against the perf references), BPF time per
sample (ehprof: median/p90/p99 from the program's own clock, and the mean
from kernel.bpf_stats_enabled), bytes per sample (ehprof: through the ring
buffer; perf: perf.data size / samples) and the profiler's own CPU share:
while recording (ehprof's summary) and over its whole run, symbolizing and
writing included (its /proc/PID/stat utime+stime at exit, over its wall
time; the workload's CPU is its child's, not counted). Needs root. Ratios are
what to quote; absolute times on a shared VM are noisy. Writes
bench/results/record_vs_perf.json (ehprof figures: the median over --runs,
with _min/_max).
"""
import argparse
import json
import os
import re
import subprocess
import sys
import statistics
import tempfile
import threading
import time

import result_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.environ.get("EHPROF_SHARED", os.path.join(ROOT, "..", "shared"))  # ../shared/eval


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def stackcheck(dump, ref, comm):
    cmd = [sys.executable, os.path.join(SHARED, "eval", "stackcheck.py"), dump, "--json"]
    if ref:
        cmd += ["--ref", ref]
    if comm:
        cmd += ["--comm", comm]
    return json.loads(sh(cmd).stdout)


def run_own_cpu(cmd):
    """(returncode, stderr, own CPU seconds, wall seconds) of cmd: its
    utime+stime read from /proc while it is a zombie (its children's CPU,
    the workload's, is in other fields)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    err_chunks = []
    t = threading.Thread(target=lambda: err_chunks.append(p.stderr.read()))
    t.start()
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    wall = time.monotonic() - t0
    with open(f"/proc/{p.pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    cpu = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    p.wait()
    t.join()
    return p.returncode, "".join(err_chunks), cpu, wall


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
    result_file.add_argument(ap, "record_vs_perf")
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
    figures = {"perf_samples": p["samples"], "perf_complete_pct": p["complete_pct"],
               "perf_callsite_pct": p["callsite_pct"], "perf_vs_perf_agree_pct": p["agree_pct"],
               "perf_bytes_per_sample": round(perf_bytes), "hz": a.F}
    runs = []
    old = sh(["sysctl", "-n", "kernel.bpf_stats_enabled"]).stdout.strip() or "0"
    sh(["sysctl", "-w", "kernel.bpf_stats_enabled=1"])
    try:
        for i in range(a.runs):
            out = os.path.join(tmp, f"ehprof{i}.txt")
            rc, err, own_s, wall_s = run_own_cpu(
                [a.ehprof, "record", "-q", "-F", str(a.F), "--format", "perf-script", "-o", out,
                 "--"] + a.workload)
            if rc != 0:
                print(err[-2000:])
                raise RuntimeError("ehprof record failed")
            s1 = stackcheck(out, ref1, a.comm)
            s2 = stackcheck(out, ref2, a.comm)
            summary = " ".join(l for l in err.splitlines() if l.startswith("ehprof:"))
            bpf = re.search(r"median ([\d.]+) us, p90 ([\d.]+) us, p99 ([\d.]+) us(?:, p10 [\d.]+ us)?; (\d+) bytes", summary)
            mean = re.search(r"mean ([\d.]+) us over", summary)
            cpu = re.search(r"own CPU time while recording ([\d.]+)%", summary)
            print(f"ehprof run {i}: samples={s1['samples']} complete={s1['complete_pct']}% "
                  f"callsite={s1['callsite_pct']}% agree={s1['agree_pct']}%/{s2['agree_pct']}% "
                  f"bpf_median_us={bpf.group(1) if bpf else '?'} p90={bpf.group(2) if bpf else '?'} "
                  f"p99={bpf.group(3) if bpf else '?'} bpf_stats_mean_us={mean.group(1) if mean else '?'} "
                  f"bytes/sample={bpf.group(4) if bpf else '?'} own_cpu={cpu.group(1) if cpu else '?'}% "
                  f"own_cpu_whole_run={100 * own_s / wall_s:.2f}% ({own_s:.2f} of {wall_s:.2f} s)")
            if bpf:
                print(f"  bytes per sample: perf/ehprof = {perf_bytes / float(bpf.group(4)):.0f}x")
            if not (bpf and mean and cpu):
                raise RuntimeError("ehprof's summary lacks the BPF time or CPU lines: " + summary)
            runs.append({"samples": s1["samples"], "complete_pct": s1["complete_pct"],
                         "callsite_pct": s1["callsite_pct"],
                         "agree_pct": min(s1["agree_pct"], s2["agree_pct"]),
                         "bpf_median_us": float(bpf.group(1)), "bpf_p90_us": float(bpf.group(2)),
                         "bpf_p99_us": float(bpf.group(3)), "bpf_stats_mean_us": float(mean.group(1)),
                         "bytes_per_sample": int(bpf.group(4)),
                         "perf_over_ehprof_bytes": round(perf_bytes / int(bpf.group(4))),
                         "own_cpu_recording_pct": float(cpu.group(1)),
                         "own_cpu_whole_run_pct": round(100 * own_s / wall_s, 2)})
    finally:
        sh(["sysctl", "-w", f"kernel.bpf_stats_enabled={old}"])
    for k in runs[0]:
        vals = [r[k] for r in runs]
        figures[f"ehprof_{k}"] = statistics.median(vals)
        figures[f"ehprof_{k}_min"], figures[f"ehprof_{k}_max"] = min(vals), max(vals)
    if not a.no_result:
        result_file.write("record_vs_perf", figures, a.note, a.result)


if __name__ == "__main__":
    main()
