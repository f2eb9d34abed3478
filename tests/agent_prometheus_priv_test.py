#!/usr/bin/env python3
"""ehprof agent --metrics-addr scraped by the real Prometheus (Debian's
package, started here on 127.0.0.1, scraping every second, with
deploy/prometheus/ehprof-alerts.yml loaded): the agent profiles the machine
with two sinks, --output-dir and --otlp to a local endpoint that answers 400
to every export; Prometheus's HTTP API must then hold the series a fleet
alerts on (samples, lost, intervals exported and refused per sink, tables
loaded and refused, memory by part, walk stop reasons), every alert rule
evaluated without error, and EhprofSinkRefusing pending or firing for the
otlp sink. --rules: only promtool check rules / test rules on the alerts
(no agent, no root).

usage: agent_prometheus_priv_test.py [--rules | EHPROF_BINARY]
"""
import http.server
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RULES_DIR = os.path.join(SRC, "deploy/prometheus")
RULES = os.path.join(RULES_DIR, "ehprof-alerts.yml")
DEADLINE_S = 120


def stop_reasons():
    """How many walk stop reasons bpf/ehprof_abi.h lists (EHP_STOP_REASONS)."""
    abi = os.path.join(SRC, "bpf", "ehprof_abi.h")
    with open(abi) as f:
        return len(re.findall(r"^\s*X\(EHP_STOP_", f.read(), re.M))


def check(cond, what):
    if not cond:
        sys.exit(f"FAILED: {what}")
    print(f"ok: {what}")


def promtool():
    for args in (["check", "rules", RULES], ["test", "rules", "ehprof-alerts_test.yml"]):
        r = subprocess.run(["promtool", *args], cwd=RULES_DIR, capture_output=True, text=True, timeout=60)
        check(r.returncode == 0, f"promtool {' '.join(args[:2])}: {r.stdout.strip()} {r.stderr.strip()}")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Refuse(http.server.BaseHTTPRequestHandler):
    """An OTLP endpoint that refuses every export (as a backend refuses a
    tenant or a schema): 400."""

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self.send_response(400)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def query(port, expr):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    with urllib.request.urlopen(url, timeout=5) as r:
        body = json.load(r)
    return {json.dumps(v["metric"], sort_keys=True): float(v["value"][1]) for v in body["data"]["result"]}


def api(port, path):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/v1/{path}", timeout=5) as r:
        return json.load(r)["data"]


def wait_for(port, expr):
    end = time.monotonic() + DEADLINE_S
    while time.monotonic() < end:
        try:
            if query(port, expr):
                return True
        except OSError:
            pass
        time.sleep(1)
    return False


def judge(pport):
    check(wait_for(pport, 'ehprof_sink_intervals_exported_total{sink="output_dir"} > 0'),
          "Prometheus scraped intervals written by --output-dir")
    check(wait_for(pport, 'ehprof_sink_intervals_refused_total{sink="otlp"} > 0'),
          "Prometheus scraped exports the OTLP endpoint refused")
    # Scraped at last (one scrape slower than its timeout on a loaded
    # machine reads 0 until the next).
    check(wait_for(pport, 'up{job="ehprof"} == 1'), "the target is up")
    check(query(pport, "ehprof_samples_total > 0"), "ehprof_samples_total")
    check(query(pport, "ehprof_samples_lost_total >= 0"), "ehprof_samples_lost_total")
    check(query(pport, 'ehprof_sink_intervals_exported_total{sink="otlp"} == 0'), "nothing counted delivered to otlp")
    check(query(pport, "ehprof_sink_intervals_dropped_total"), "ehprof_sink_intervals_dropped_total")
    check(query(pport, "ehprof_tables_loaded_total > 0"), "ehprof_tables_loaded_total")
    check(len(query(pport, "ehprof_tables_refused_total")) == 2, "ehprof_tables_refused_total by reason")
    check(len(query(pport, "ehprof_memory_bytes")) == 9 and query(pport, "ehprof_resident_memory_bytes > 0"),
          "ehprof_memory_bytes by part and ehprof_resident_memory_bytes")
    stops = query(pport, "ehprof_walk_stops_total")
    check(len(stops) == stop_reasons() - 1 and query(pport, 'ehprof_walk_stops_total{reason="end_of_stack"} > 0'),
          "ehprof_walk_stops_total by reason, complete walks among them")
    groups = api(pport, "rules")["groups"]
    rules = [r for g in groups for r in g["rules"]]
    check(len(rules) == 11 and all(r["health"] == "ok" for r in rules),
          "the 11 alert rules loaded and evaluated without error")
    end = time.monotonic() + 30
    while time.monotonic() < end:
        alerts = [a for a in api(pport, "alerts")["alerts"] if a["labels"]["alertname"] == "EhprofSinkRefusing"]
        if any(a["labels"].get("sink") == "otlp" and a["state"] in ("pending", "firing") for a in alerts):
            break
        time.sleep(1)
    check(any(a["labels"].get("sink") == "otlp" for a in alerts), "EhprofSinkRefusing pending for sink otlp")


def main():
    if sys.argv[1:] == ["--rules"]:
        promtool()
        return
    ehprof = sys.argv[1]
    prometheus = shutil.which("prometheus")
    check(prometheus is not None, "prometheus installed (scripts/packages.sh)")
    work = tempfile.mkdtemp(prefix="ehprof-prom-")
    procs = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Refuse)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        mport, pport = free_port(), free_port()
        os.mkdir(os.path.join(work, "out"))
        with open(os.path.join(work, "prometheus.yml"), "w") as f:
            f.write(f"""global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [{RULES}]
scrape_configs:
  - job_name: ehprof
    static_configs:
      - targets: ["127.0.0.1:{mport}"]
""")
        # A workload on a CPU while the agent runs (it stops by itself).
        procs.append(subprocess.Popen(["timeout", str(DEADLINE_S + 60), sys.executable, "-c", "while True: pass"]))
        agent_log = open(os.path.join(work, "agent.log"), "w")
        procs.append(subprocess.Popen(
            ["timeout", "-s", "INT", str(DEADLINE_S + 60), ehprof, "agent", "-a", "--interval", "1",
             "--metrics-every", "0", "--output-dir", os.path.join(work, "out"),
             "--otlp", f"http://127.0.0.1:{server.server_address[1]}", "--metrics-addr", f"127.0.0.1:{mport}"],
            stdout=agent_log, stderr=subprocess.STDOUT))
        prom_log = open(os.path.join(work, "prometheus.log"), "w")
        procs.append(subprocess.Popen(
            ["timeout", str(DEADLINE_S + 60), prometheus, "--config.file", os.path.join(work, "prometheus.yml"),
             "--storage.tsdb.path", os.path.join(work, "data"), "--web.listen-address", f"127.0.0.1:{pport}"],
            stdout=prom_log, stderr=subprocess.STDOUT))
        judge(pport)
        promtool()
    finally:
        for i, p in enumerate(procs):
            if p.poll() is None:
                # The agent (the second) stops on SIGINT after its last interval.
                p.send_signal(signal.SIGINT if i == 1 else signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        server.shutdown()
        if os.environ.get("EHPROF_KEEP"):
            print(f"kept {work}")
        else:
            for name in ("agent.log", "prometheus.log"):
                path = os.path.join(work, name)
                if os.path.exists(path):
                    print(f"--- {name} (last lines)\n" + "".join(open(path).readlines()[-8:]))
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
