#!/usr/bin/env python3
"""An OpenTelemetry Collector outage under `ehprof agent --otlp` (issue 22):
the real Collector (scripts/install_otelcol.sh: the OTLP receiver with the
profiles feature gate, the file exporter) is stopped for --down-for seconds
of a --minutes run and started again on the same ports; the agent keeps
sampling testdata's deep_recursion and exports every --interval.

Reported: the intervals the agent made, exported, had refused or dropped
(its own exit summary), how often it said the failure and the recovery,
and what the Collector wrote (tests/otlp_fold.py): the samples against the
agent's count, the profiles against its intervals, and the profiles whose
interval started while the Collector was down.

  python3 bench/otlp_outage.py                            # 5 min, down 60 s from 1:00
  python3 bench/otlp_outage.py --minutes 1 --down-for 15  # a quick look
Needs root (BPF).
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otelcol  # noqa: E402
import result_file  # noqa: E402
from otelcol import free_port, installed_collector  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FREQ = 99


class Collector:
    """The Collector on 127.0.0.1:port, a new output file each start."""

    def __init__(self, binary, work):
        self.binary, self.work, self.port, self.files, self.proc = binary, work, free_port(), [], None

    def start(self):
        n = len(self.files)
        out, cfg, log = (os.path.join(self.work, f"{name}.{n}{ext}") for name, ext in
                         (("received", ".jsonl"), ("config", ".yaml"), ("collector", ".log")))
        with open(cfg, "w") as f:
            f.write("receivers:\n  otlp:\n    protocols:\n      http:\n"
                    f"        endpoint: 127.0.0.1:{self.port}\n"
                    f"exporters:\n  file:\n    path: {out}\n"
                    "service:\n  telemetry:\n    metrics:\n      level: none\n"
                    "  pipelines:\n    profiles:\n      receivers: [otlp]\n      exporters: [file]\n")
        self.files.append(out)
        self.proc = otelcol.launch(self.binary, cfg, log)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)


def summary(collector, service):
    files = [f for f in collector.files if os.path.exists(f)]
    out = subprocess.run([sys.executable, os.path.join(ROOT, "tests", "otlp_fold.py"), "--summary", *files],
                         capture_output=True, text=True, check=True).stdout
    return json.loads(out).get(service, {"total": 0, "profiles": 0, "starts": []})


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--testdata", default=os.path.join(ROOT, "build", "testdata"))
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--down-at", type=float, default=60, help="seconds into the run the Collector stops")
    ap.add_argument("--down-for", type=float, default=60)
    ap.add_argument("--interval", type=int, default=10, help="the agent's --interval (its default)")
    result_file.add_argument(ap, "otlp_outage")
    a = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (BPF)")
    work = tempfile.mkdtemp(prefix="ehprof-otlp-outage-")
    col = Collector(installed_collector(), work)
    col.start()
    wl = subprocess.Popen([os.path.join(a.testdata, "deep_recursion"), str(int(a.minutes * 60 + 300)), "10"],
                          stdout=subprocess.DEVNULL)
    err_path = os.path.join(work, "agent.stderr")
    t0 = time.time()
    with open(err_path, "w") as err:
        agent = subprocess.Popen([a.ehprof, "agent", "-p", str(wl.pid), "-F", str(FREQ), "--interval",
                                  str(a.interval), "--otlp", f"http://127.0.0.1:{col.port}",
                                  "--metrics-every", "0", "--service-name", "otlp-outage-bench"], stderr=err)
    try:
        time.sleep(a.down_at)
        col.stop()
        t_down = time.time()
        print(f"outage: Collector stopped at {t_down - t0:.0f} s", file=sys.stderr)
        time.sleep(a.down_for)
        col.start()
        t_up = time.time()
        print(f"outage: Collector ready again at {t_up - t0:.0f} s", file=sys.stderr)
        time.sleep(max(0.0, a.minutes * 60 - (time.time() - t0)))
        agent.send_signal(signal.SIGTERM)  # flushes the last interval
        rc = agent.wait(timeout=300)
        stderr = open(err_path).read()
        samples, intervals = map(int, re.search(r"(\d+) samples in (\d+) intervals", stderr).groups())
        got = {}
        for _ in range(20):  # the exporter writes each second
            got = summary(col, "otlp-outage-bench")
            if got["total"] >= samples:
                break
            time.sleep(0.5)
    finally:
        for p in (agent, wl, col.proc):
            if p.poll() is None:
                p.kill()
                p.wait()
    exported = re.search(r"otlp exported (\d+) intervals to \S+ \((\d+) refused, (\d+) dropped\)", stderr)
    failures = len(re.findall(r"otlp push failed", stderr))
    recovered = len(re.findall(r"otlp push recovered after", stderr))
    during = sum(1 for s in got["starts"] if t_down <= s < t_up)
    print(f"otlp outage: {a.minutes:g} min run, Collector down {t_up - t_down:.0f} s from {t_down - t0:.0f} s; "
          f"agent exit {rc}")
    print(f"agent: {samples} samples in {intervals} intervals; exported "
          f"{exported.group(1) if exported else '?'} (refused {exported.group(2) if exported else '?'}, "
          f"dropped {exported.group(3) if exported else '?'}); the failure said {failures} time(s), "
          f"the recovery {recovered}")
    print(f"collector: {got['total']} samples ({100 * got['total'] / max(1, samples):.1f} % of the agent's) in "
          f"{got['profiles']} profiles; {during} of them for intervals that started while it was down")
    print(f"(stderr, the Collector's logs and files in {work})")
    ok = rc == 0 and exported and int(exported.group(1)) == intervals and got["total"] == samples
    if not a.no_result and exported:
        result_file.write("otlp_outage", {
            "samples": samples, "intervals": intervals, "exported": int(exported.group(1)),
            "refused": int(exported.group(2)), "dropped": int(exported.group(3)),
            "failures_said": failures, "recoveries_said": recovered, "collector_samples": got["total"],
            "collector_pct": round(100 * got["total"] / max(1, samples), 1),
            "collector_profiles": got["profiles"], "profiles_during_outage": during,
            "down_s": round(t_up - t_down)}, a.note, a.result)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
