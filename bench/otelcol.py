"""The real OpenTelemetry Collector for the benches (scripts/install_otelcol.sh):
launch() starts one from a config and waits until it is ready.

FleetCollector, for bench/fleet_cost.py: one Collector with an OTLP
receiver per sender (its own port on 127.0.0.1, HTTP or gRPC) piped to its
own file exporter, so one Collector process takes every profiler's export
and what each sent stays apart. count_samples() reads a stretch of one
sender's file (OTLP JSON, one ExportProfilesServiceRequest a line).
"""
import collections
import json
import os
import signal
import socket
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def installed_collector():
    out = subprocess.run(["bash", os.path.join(ROOT, "scripts", "install_otelcol.sh")],
                         capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[-1]


def launch(binary, cfg, log):
    """The Collector at binary with config cfg, its output in log; returns
    its process once it says it is ready (profiles need the feature gate)."""
    with open(log, "w") as lf:
        proc = subprocess.Popen([binary, f"--config={cfg}", "--feature-gates=+service.profilesSupport"],
                                stdout=lf, stderr=lf)
    for _ in range(600):
        with open(log) as f:
            if "Everything is ready" in f.read():
                return proc
        if proc.poll() is not None:
            break
        time.sleep(0.1)
    raise SystemExit(f"the Collector did not start; see {log}")


class FleetCollector:
    """senders: {name: "http" or "grpc"}; after start(), port[name] and
    file[name] are that sender's receiver port and output file."""

    def __init__(self, work, senders):
        self.work, self.senders = work, senders
        self.port = {n: free_port() for n in senders}
        self.file = {n: os.path.join(work, f"received.{n}.jsonl") for n in senders}
        self.proc = None

    def config(self):
        rec, exp, pipes = [], [], []
        for n, proto in self.senders.items():
            rec.append(f"  otlp/{n}:\n    protocols:\n      {proto}:\n        endpoint: 127.0.0.1:{self.port[n]}\n")
            exp.append(f"  file/{n}:\n    path: {self.file[n]}\n    flush_interval: 100ms\n")
            pipes.append(f"    profiles/{n}:\n      receivers: [otlp/{n}]\n      exporters: [file/{n}]\n")
        return ("receivers:\n" + "".join(rec) + "exporters:\n" + "".join(exp) +
                "service:\n  telemetry:\n    metrics:\n      level: none\n  pipelines:\n" + "".join(pipes))

    def start(self):
        cfg, log = os.path.join(self.work, "collector.yaml"), os.path.join(self.work, "collector.log")
        with open(cfg, "w") as f:
            f.write(self.config())
        self.proc = launch(installed_collector(), cfg, log)

    def sizes(self):
        """Each file's length up to its last whole line (a request being
        written is left to the next stretch)."""
        return {n: whole_lines(p) for n, p in self.file.items()}

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            self.proc.wait(timeout=60)


def whole_lines(path):
    if not os.path.exists(path):
        return 0
    with open(path, "rb") as f:
        data = f.read()
    return data.rfind(b"\n") + 1


def resource_name(resource, strings):
    """service.name, else process.executable.name's last part, else "?"."""
    attrs = {}
    for kv in resource.get("attributes", []):
        key = kv["key"] if "key" in kv else strings[int(kv.get("keyStrindex", 0))]
        v = kv.get("value", {})
        attrs[key] = v["stringValue"] if "stringValue" in v else strings[int(v.get("stringValueStrindex", 0))]
    name = attrs.get("service.name") or attrs.get("process.executable.name") or "?"
    return name.rsplit("/", 1)[-1]


def count_samples(path, start=0, end=None):
    """What path's bytes [start, end) hold: samples, requests, stacks (the
    requests' stack tables summed) and samples by service (service.name, or
    the executable's name). A sample counts its values (ehprof: one per
    sample at that stack) or, with none, its timestamps (the OpenTelemetry
    profiler: one per event)."""
    out = {"samples": 0, "requests": 0, "stacks": 0, "by_service": collections.Counter()}
    if not os.path.exists(path):
        return out
    with open(path, "rb") as f:
        f.seek(start)
        data = f.read(None if end is None else max(0, end - start))
    for line in data.split(b"\n"):
        line = line.strip().strip(b"\0")
        if not line:
            continue
        req = json.loads(line)
        strings = req.get("dictionary", {}).get("stringTable", [""])
        out["requests"] += 1
        out["stacks"] += max(0, len(req.get("dictionary", {}).get("stackTable", [])) - 1)
        for rp in req.get("resourceProfiles", []):
            who = resource_name(rp.get("resource", {}), strings)
            for sp in rp.get("scopeProfiles", []):
                for prof in sp.get("profiles", []):
                    for smp in prof.get("samples", []):
                        vals = smp.get("values")
                        n = sum(int(v) for v in vals) if vals else len(smp.get("timestampsUnixNano", []))
                        out["samples"] += n
                        out["by_service"][who] += n
    return out
