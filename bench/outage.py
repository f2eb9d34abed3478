#!/usr/bin/env python3
"""A Pyroscope outage under `ehprof agent` (issue 11's must-show): the real
server (bench/overhead.py's start_pyroscope, built by
scripts/install_pyroscope.sh) is stopped for --down-for seconds of a
--minutes run and started again on the same storage; the agent keeps
sampling testdata's deep_recursion and pushes every --interval.

Reported: the intervals the agent made, pushed, had refused or dropped
(its own exit summary), how often it said the failure, and what Pyroscope
serves afterwards: the samples (ticks over the period) against the
agent's count, and the intervals of its timeline that hold data, the
outage's among them.

  python3 bench/outage.py                                # 5 min, down 60 s from 1:00
  python3 bench/outage.py --minutes 2 --down-for 20      # a quick look
Needs root (BPF) and a quiet machine for the timing to mean anything.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

import result_file
import time
import urllib.parse
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import overhead  # noqa: E402  (start_pyroscope, PYROSCOPE)

FREQ = 99


def render(port, service, since, until):
    """Pyroscope's render API (JSON) for the service's CPU over [since, until]."""
    query = f'process_cpu:cpu:nanoseconds:cpu:nanoseconds{{service_name="{service}"}}'
    url = (f"http://127.0.0.1:{port}/pyroscope/render?" +
           urllib.parse.urlencode({"query": query, "from": int(since), "until": int(until), "format": "json"}))
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.load(r)


def timeline_buckets(doc):
    """(start_s, samples) per step of the render's timeline."""
    tl = doc.get("timeline") or {}
    start, step = tl.get("startTime", 0), tl.get("durationDelta", 10) or 10
    return [(start + i * step, v) for i, v in enumerate(tl.get("samples") or [])]


def run(a, work):
    server, port = overhead.start_pyroscope(work)
    wl = subprocess.Popen([os.path.join(a.testdata, "deep_recursion"), str(a.minutes * 60 + 300), "10"],
                          stdout=subprocess.DEVNULL)
    err_path = os.path.join(work, "agent.stderr")
    t0 = time.time()
    with open(err_path, "w") as err:
        agent = subprocess.Popen([a.ehprof, "agent", "-p", str(wl.pid), "-F", str(FREQ), "--interval",
                                  str(a.interval), "--pyroscope", f"http://127.0.0.1:{port}",
                                  "--metrics-every", "0", "--service-name", "outage-bench"], stderr=err)
    try:
        time.sleep(a.down_at)
        server.send_signal(signal.SIGTERM)  # as an operator stops it: it syncs what it holds
        server.wait(timeout=120)
        t_down = time.time()
        print(f"outage: server stopped at {t_down - t0:.0f} s", file=sys.stderr)
        time.sleep(a.down_for)
        server, port = overhead.start_pyroscope(work)
        t_up = time.time()
        print(f"outage: server ready again at {t_up - t0:.0f} s", file=sys.stderr)
        time.sleep(max(0.0, a.minutes * 60 - (time.time() - t0)))
        agent.send_signal(signal.SIGTERM)  # flushes the last interval
        agent_rc = agent.wait(timeout=300)
        t_end = time.time()
        stderr = open(err_path).read()
        # Pushes answered 200 are visible to the querier at once, but for
        # what the ingester held around its own stop: poll a little.
        samples = int(re.search(r"(\d+) samples in (\d+) intervals", stderr).group(1))
        served, doc = 0.0, {}
        for _ in range(30):
            doc = render(port, "outage-bench", t0 - 60, t_end + 60)
            served = doc.get("flamebearer", {}).get("numTicks", 0) / (1e9 / FREQ)
            if served >= samples * 0.99:
                break
            time.sleep(2)
        return agent_rc, stderr, samples, served, timeline_buckets(doc), (t0, t_down, t_up, t_end)
    finally:
        for p in (agent, wl, server):
            if p.poll() is None:
                p.kill()
                p.wait()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--testdata", default=os.path.join(ROOT, "build", "testdata"))
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--down-at", type=float, default=60, help="seconds into the run the server stops")
    ap.add_argument("--down-for", type=float, default=60)
    ap.add_argument("--interval", type=int, default=10, help="the agent's --interval (its default)")
    result_file.add_argument(ap, "outage")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (BPF)")
    if not os.access(overhead.PYROSCOPE, os.X_OK):
        raise SystemExit(f"{overhead.PYROSCOPE} missing: bash scripts/install_pyroscope.sh")
    work = tempfile.mkdtemp(prefix="ehprof-outage-")
    rc, stderr, samples, served, buckets, (t0, t_down, t_up, t_end) = run(a, work)
    pushed = re.search(r"pushed (\d+) profiles to \S+ \((\d+) refused, (\d+) dropped\)", stderr)
    intervals = int(re.search(r"(\d+) samples in (\d+) intervals", stderr).group(2))
    failures = len(re.findall(r"push failed", stderr))
    recovered = len(re.findall(r"push recovered after", stderr))
    print(f"outage: {a.minutes:g} min run, server down {t_up - t_down:.0f} s from {t_down - t0:.0f} s; "
          f"agent exit {rc}")
    print(f"agent: {samples} samples in {intervals} intervals; pushed {pushed.group(1) if pushed else '?'} "
          f"(refused {pushed.group(2) if pushed else '?'}, dropped {pushed.group(3) if pushed else '?'}); "
          f"the failure said {failures} time(s), the recovery {recovered}")
    # The steps wholly inside the run, and those wholly inside the outage.
    step = buckets[1][0] - buckets[0][0] if len(buckets) > 1 else a.interval
    run_steps = [v for (s, v) in buckets if t0 <= s and s + step <= t_end]
    down = [v for (s, v) in buckets if t_down <= s and s + step <= t_up]
    print(f"pyroscope: serves {served:.0f} samples ({100 * served / max(1, samples):.1f} % of the agent's); "
          f"{step:.0f} s timeline steps with data: {sum(1 for v in run_steps if v)} of the {len(run_steps)} "
          f"within the run, {sum(1 for v in down if v)} of the {len(down)} within the outage")
    print(f"(stderr and Pyroscope's log in {work})")
    ok = rc == 0 and pushed and int(pushed.group(1)) + int(pushed.group(3)) == intervals
    if not a.no_result and pushed:
        result_file.write("outage", {
            "samples": samples, "intervals": intervals, "pushed": int(pushed.group(1)),
            "refused": int(pushed.group(2)), "dropped": int(pushed.group(3)),
            "failures_said": failures, "recoveries_said": recovered, "served": round(served),
            "served_pct": round(100 * served / max(1, samples), 1),
            "down_s": round(t_up - t_down), "steps_with_data": sum(1 for v in run_steps if v),
            "steps": len(run_steps), "outage_steps_with_data": sum(1 for v in down if v),
            "outage_steps": len(down)}, a.note, a.result)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
