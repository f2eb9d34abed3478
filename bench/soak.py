#!/usr/bin/env python3
"""Memory and CPU of `ehprof agent` over a long run (issue 11): the agent
profiles the whole machine at 99 Hz with --output-dir (10 s intervals, the
newest 10 kept) while testdata's churn_load starts RATE short-lived
processes a second (a third exec churn_child, a third dlopen libdlwork.so,
a third spin). Every 10 s: the agent's RSS (/proc/PID/status) and its CPU
time (utime + stime). At the end: RSS at 5 min and at the end (flat once
warm: within 5 %), the steady-state CPU share of one CPU from 5 min on
(start-up excluded), intervals written, and the agent's own metrics line.

  python3 bench/soak.py --minutes 30 --rate 200
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile

import result_file
import time
from agent_memory import metric_parts

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def stat(pid):
    rss = None
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                rss = int(line.split()[1]) / 1024
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    ticks = int(fields[11]) + int(fields[12])
    return rss, ticks / os.sysconf("SC_CLK_TCK")


# Counts the agent's metrics line carries ("samples N, lost N, intervals N
# (dropped N) ... evicted N files (X MB)").
COUNTS = (("samples", r"samples (\d+)"), ("lost", r"lost (\d+)"), ("intervals", r"intervals (\d+)"),
          ("intervals_dropped", r"\(dropped (\d+)\)"), ("evicted_files", r"evicted (\d+) files"),
          ("evicted_mb", r"evicted \d+ files \(([\d.]+) MB\)"))


def run_counts(log_lines):
    """The last metrics line's counts, and how many times the agent went
    over --memory-limit (each such interval evicts symbol data)."""
    metrics = [l for l in log_lines if "ehprof agent:" in l and " RSS " in l]
    out = {}
    for key, pattern in COUNTS:
        m = re.search(pattern, metrics[-1]) if metrics else None
        if m:
            out[key] = float(m.group(1)) if "." in m.group(1) else int(m.group(1))
    out["over_memory_limit"] = sum("over --memory-limit" in l for l in log_lines)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--testdata", default=os.path.join(ROOT, "build", "testdata"))
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--rate", type=int, default=200)
    ap.add_argument("--warm-minutes", type=float, default=5)
    result_file.add_argument(ap, "soak")
    a = ap.parse_args()
    out = tempfile.mkdtemp(prefix="ehprof-soak-")
    log = open(os.path.join(out, "agent.log"), "w")
    agent = subprocess.Popen([a.ehprof, "agent", "-a", "-F", "99", "--interval", "10", "--output-dir",
                              os.path.join(out, "profiles"), "--keep", "10", "--metrics-every", "60"],
                             stderr=log, stdout=subprocess.DEVNULL)
    time.sleep(3)
    seconds = int(a.minutes * 60)
    load = subprocess.Popen([os.path.join(a.testdata, "churn_load"), str(a.rate), str(seconds),
                             os.path.join(a.testdata, "churn_child.stripped"),
                             os.path.join(a.testdata, "libdlwork.so")],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    points = []
    start = time.monotonic()
    try:
        while load.poll() is None and agent.poll() is None:
            time.sleep(10)
            rss, cpu = stat(agent.pid)
            if rss is None:  # exited between the poll and the read (a zombie has no VmRSS)
                break
            points.append((time.monotonic() - start, rss, cpu))
            print(f"soak: {points[-1][0]:7.0f} s  RSS {rss:7.1f} MB  CPU {cpu:7.1f} s", flush=True)
    finally:
        if load.poll() is None:
            load.kill()
        died = agent.poll()
        if died is None:
            agent.send_signal(signal.SIGTERM)
        agent.wait(timeout=120)
    if died is not None:
        why = f"signal {signal.Signals(-died).name}" if died < 0 else f"exit {died}"
        print(f"soak: the agent ended by itself ({why}) after {time.monotonic() - start:.0f} s; "
              f"its log: {os.path.join(out, 'agent.log')}", file=sys.stderr)
    load_out = load.stdout.read().strip()
    warm = [p for p in points if p[0] >= a.warm_minutes * 60]
    if not warm:
        sys.exit("soak: the run ended before it was warm")
    first, last = warm[0], points[-1]
    cpu_share = (last[2] - first[2]) / (last[0] - first[0]) * 100 if last[0] > first[0] else 0
    files = len(os.listdir(os.path.join(out, "profiles")))
    print(f"soak: load: {load_out}")
    print(f"soak: RSS at {first[0] / 60:.1f} min {first[1]:.1f} MB, at {last[0] / 60:.1f} min {last[1]:.1f} MB "
          f"({(last[1] - first[1]) / first[1] * 100:+.1f} %); peak {max(p[1] for p in points):.1f} MB")
    print(f"soak: steady-state CPU {cpu_share:.2f} % of one CPU (from {first[0] / 60:.1f} min); "
          f"{files} profiles kept; agent exit {agent.returncode}")
    log.close()
    with open(os.path.join(out, "agent.log")) as f:
        log_lines = f.readlines()
    tail = [l for l in log_lines if "ehprof agent:" in l][-3:]
    counts = run_counts(log_lines)
    print("soak: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    print("".join("soak: " + l for l in tail), end="")
    print(f"soak: files in {out}")
    if died is not None:
        sys.exit("soak: no result written: the agent did not last the run")
    if not a.no_result:
        result_file.write("soak", {
            "minutes": a.minutes, "rate": a.rate, "rss_warm_mb": round(first[1], 1),
            "warm_min": round(first[0] / 60, 1), "rss_end_mb": round(last[1], 1),
            "end_min": round(last[0] / 60, 1),
            "rss_change_pct": round((last[1] - first[1]) / first[1] * 100, 1),
            "rss_peak_mb": round(max(p[1] for p in points), 1), "cpu_pct": round(cpu_share, 2),
            "profiles_kept": files, "agent_exit": agent.returncode, **counts,
            # The agent's last metrics line, part by part (MB).
            **{f"part_{k}" + ("" if k == "symbol_files" else "_mb"): v
               for k, v in metric_parts(next((l for l in reversed(tail) if " RSS " in l), "")).items()}},
            a.note, a.result)


if __name__ == "__main__":
    main()
