#!/usr/bin/env python3
"""A fleet's cost on paper, from measurement (issue 35, item 5): what one
host's profiler sends and uses, per minute, at its default settings, beside
the OpenTelemetry eBPF profiler on the same host in the same run.

One host workload, started first and kept busy to the end: the bundled fio
job (../shared/eval/fio-null.job) in a loop, Debian's Python running
testdata/python/mix.py and node running testdata/nodework.js, besides
whatever else the machine runs. Side by side, all profiling the whole host
for the same minutes:
  ehprof_pyroscope  `ehprof agent -a` at its defaults (99 Hz, 10 s
              intervals) pushing to the real Pyroscope
              (scripts/install_pyroscope.sh), gzipped pprof as it sends it
  ehprof_otlp another, exporting OTLP over HTTP (gzipped, its default) to
              the real Collector (scripts/install_otelcol.sh): one agent
              per sink, as a fleet deploys one
  otel_20hz   the OpenTelemetry eBPF profiler (scripts/install_otel_profiler.sh)
              at its defaults (20 Hz, reports every 5 s), OTLP over gRPC,
              gzipped, to the same Collector
  otel_99hz   the same at ehprof's rate (-samples-per-second 99)
Every sender talks to its server through a TCP relay here that counts the
bytes each way (bench/byte_relay.py); the Collector has a receiver and a
file per sender (bench/otelcol.py), from which the samples each
sent are counted. After --warmup seconds (tables built, first intervals
sent), over --minutes: bytes sent per minute, bytes per sample, samples
per second, each profiler's CPU (/proc/PID/stat, % of one CPU) and RSS
(median of VmRSS every 5 s, and VmHWM); and for 1,000 such hosts the
ingest bandwidth (Mbit/s), the backend's samples per second and the bytes
a day.

  python3 bench/fleet_cost.py                  # 5 min after 60 s of warm-up
  python3 bench/fleet_cost.py --minutes 1 --warmup 30 --no-result
Needs root. Writes bench/results/fleet_cost.json.
"""
import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import result_file  # noqa: E402
from byte_relay import ByteRelay  # noqa: E402
from otelcol import FleetCollector, count_samples, free_port  # noqa: E402
from overhead import FIO_JOB, OTEL, PYROSCOPE, cpu_seconds, peak_rss_mb, start_pyroscope, status_mb  # noqa: E402

TABLE_CACHE = "/var/cache/ehprof/fleet_cost_tables"
HOSTS = 1000
WORKLOAD = ("fio", "python3", "node")  # ehprof's service names for the load started here


def start_workload(seconds, python):
    """The host's load; each a process group of its own, ended by stop_all."""
    cmds = [f"while :; do fio --output=/dev/null {FIO_JOB}; done",
            f"exec {python} {ROOT}/testdata/python/mix.py {seconds}",
            f"exec node {ROOT}/testdata/nodework.js {seconds}"]
    return [subprocess.Popen(["bash", "-c", c], start_new_session=True, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL) for c in cmds]


def stop_all(procs, sig=signal.SIGKILL):
    for p in procs:
        if p.poll() is None:
            try:
                os.killpg(p.pid, sig)
            except ProcessLookupError:
                pass
    for p in procs:
        try:
            p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def profiler_argv(args, relays):
    url = lambda name: f"http://127.0.0.1:{relays[name].port}"
    return {
        "ehprof_pyroscope": [args.ehprof, "agent", "-a", "--pyroscope", url("ehprof_pyroscope"),
                             "--metrics-every", "2", "--table-cache", TABLE_CACHE],
        "ehprof_otlp": [args.ehprof, "agent", "-a", "--otlp", url("ehprof_otlp"),
                        "--metrics-every", "2", "--table-cache", TABLE_CACHE],
        "otel_20hz": [OTEL, "-collection-agent", f"127.0.0.1:{relays['otel_20hz'].port}", "-disable-tls"],
        "otel_99hz": [OTEL, "-collection-agent", f"127.0.0.1:{relays['otel_99hz'].port}", "-disable-tls",
                      "-samples-per-second", "99"],
    }


def agent_samples(log):
    """The samples an ehprof agent has taken, from its last metrics line
    (one every 2 s)."""
    with open(log) as f:
        counts = re.findall(r"^ehprof agent: samples (\d+),", f.read(), re.M)
    return int(counts[-1]) if counts else 0


def snapshot(relays, profs, collector, logs):
    """Relay bytes and profiler CPU now; the Collector's files a moment later
    (its exporter flushes every 100 ms)."""
    snap = {"t": time.time(), "bytes": {n: r.snapshot() for n, r in relays.items()},
            "cpu": {n: cpu_seconds(p.pid) for n, p in profs.items()},
            "pyroscope_samples": agent_samples(logs["ehprof_pyroscope"])}
    time.sleep(0.5)
    snap["files"] = collector.sizes()
    return snap


def measure(args, relays, profs, collector, logs):
    deadline = time.time() + args.warmup
    while time.time() < deadline:
        time.sleep(1)
        for n, p in profs.items():
            if p.poll() is not None:
                raise SystemExit(f"{n} ended during warm-up; its log: {logs[n]}")
    s0 = snapshot(relays, profs, collector, logs)
    rss = {n: [] for n in profs}
    end = s0["t"] + args.minutes * 60
    while time.time() < end:
        time.sleep(min(5, max(0.1, end - time.time())))
        for n, p in profs.items():
            if p.poll() is not None:
                raise SystemExit(f"{n} ended early; its log: {logs[n]}")
            rss[n].append(status_mb(p.pid, "VmRSS"))
    s1 = snapshot(relays, profs, collector, logs)
    peak = {n: peak_rss_mb(p.pid) for n, p in profs.items()}
    return s0, s1, rss, peak


def figures_of(s0, s1, rss, peak, collector):
    minutes = (s1["t"] - s0["t"]) / 60
    fig = {"minutes": round(minutes, 2)}
    # The samples each sender's Collector receiver got in the window; the
    # Pyroscope agent's own count over it.
    got = {n: count_samples(collector.file[n], s0["files"][n], s1["files"][n]) for n in collector.file}
    samples = {n: g["samples"] for n, g in got.items()}
    samples["ehprof_pyroscope"] = s1["pyroscope_samples"] - s0["pyroscope_samples"]
    for n, g in got.items():
        # Distinct stacks over samples: how little aggregation saved here.
        fig[f"{n}_stacks_per_sample"] = round(g["stacks"] / g["samples"], 3) if g["samples"] else 0
        fig[f"{n}_requests_per_min"] = round(g["requests"] / minutes, 1)
    by_service = got["ehprof_otlp"]["by_service"]
    ours = sum(v for k, v in by_service.items() if k in WORKLOAD)
    fig["workload_samples_pct"] = round(100 * ours / samples["ehprof_otlp"], 1) if samples["ehprof_otlp"] else 0
    for n in s0["bytes"]:
        up = s1["bytes"][n]["up"] - s0["bytes"][n]["up"]
        down = s1["bytes"][n]["down"] - s0["bytes"][n]["down"]
        per_min = up / minutes
        sps = samples[n] / (minutes * 60)
        fig.update({f"{n}_bytes_per_min": round(per_min), f"{n}_answer_bytes_per_min": round(down / minutes),
                    f"{n}_samples_per_s": round(sps, 1),
                    f"{n}_bytes_per_sample": round(up / samples[n], 1) if samples[n] else 0,
                    f"{n}_kib_per_min": round(per_min / 1024, 1),
                    f"{n}_{HOSTS}_hosts_mbit_s": round(per_min * HOSTS * 8 / 60 / 1e6, 2),
                    f"{n}_{HOSTS}_hosts_gb_per_day": round(per_min * HOSTS * 1440 / 1e9, 1),
                    f"{n}_{HOSTS}_hosts_samples_per_s": round(sps * HOSTS)})
    for n in s0["cpu"]:
        fig[f"{n}_cpu_pct"] = round(100 * (s1["cpu"][n] - s0["cpu"][n]) / (s1["t"] - s0["t"]), 2)
        fig[f"{n}_rss_mb"] = round(statistics.median(rss[n]), 1)
        fig[f"{n}_peak_rss_mb"] = round(peak[n], 1)
    top = {k: round(100 * v / samples["ehprof_otlp"], 1) for k, v in by_service.most_common(12)}
    return fig, top


def check_delivered(log, what):
    """An agent's exit line: every push (or export) accepted."""
    with open(log) as f:
        m = re.search(rf"{what} (\d+) \w+ to \S+ \((\d+) refused, (\d+) dropped\)", f.read())
    if not m or int(m.group(1)) == 0 or m.group(2) != "0" or m.group(3) != "0":
        raise SystemExit(f"{log}: not every interval delivered ({m.group(0) if m else 'no exit line'})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--minutes", type=float, default=5)
    ap.add_argument("--warmup", type=float, default=60, help="seconds before the window opens")
    ap.add_argument("--python", default="/usr/bin/python3", help="the workload's Python (Debian's)")
    result_file.add_argument(ap, "fleet_cost")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (BPF)")
    for path, how in ((OTEL, "install_otel_profiler.sh"), (PYROSCOPE, "install_pyroscope.sh")):
        if not os.access(path, os.X_OK):
            raise SystemExit(f"{path} missing: bash scripts/{how}")
    work = tempfile.mkdtemp(prefix="ehprof-fleet-cost-")
    os.makedirs(TABLE_CACHE, exist_ok=True)
    collector = FleetCollector(work, {"ehprof_otlp": "http", "otel_20hz": "grpc", "otel_99hz": "grpc"})
    collector.start()
    pyroscope, pyro_port = start_pyroscope(work, {"http": free_port(), "grpc": free_port(), "ml": free_port()})
    relays = {n: ByteRelay(collector.port[n]) for n in collector.port}
    relays["ehprof_pyroscope"] = ByteRelay(pyro_port)
    load = start_workload(int(args.warmup + args.minutes * 60 + 120), args.python)
    profs, logs = {}, {}
    try:
        time.sleep(2)
        for n, argv in profiler_argv(args, relays).items():
            logs[n] = os.path.join(work, f"{n}.log")
            with open(logs[n], "w") as lf:
                profs[n] = subprocess.Popen(argv, stdout=lf, stderr=lf, start_new_session=True)
        s0, s1, rss, peak = measure(args, relays, profs, collector, logs)
        stop_all(profs.values(), signal.SIGINT)  # ehprof sends its last interval
        check_delivered(logs["ehprof_pyroscope"], "pushed")
        check_delivered(logs["ehprof_otlp"], "otlp exported")
        fig, top = figures_of(s0, s1, rss, peak, collector)
        time.sleep(1)
        total = count_samples(collector.file["ehprof_otlp"])["samples"]
        with open(logs["ehprof_otlp"]) as f:
            own = int(re.search(r"(\d+) samples in \d+ intervals", f.read()).group(1))
        fig["ehprof_otlp_collector_received_pct"] = round(100 * total / own, 2) if own else 0
    finally:
        stop_all(list(profs.values()) + load)
        collector.stop()
        pyroscope.terminate()
        pyroscope.wait()
        for r in relays.values():
            r.close()
    print_table(fig)
    print("the host's samples by service (ehprof's, % of the window's): " +
          ", ".join(f"{k} {v}" for k, v in top.items()))
    if not args.no_result:
        note = args.note or f"load average {os.getloadavg()[0]:.2f} at the end (see machine)"
        result_file.write("fleet_cost", fig, note, args.result, extra={"services_pct": top})
    print(f"logs and Collector files: {work}", file=sys.stderr)


def print_table(fig):
    print(f"\nper host, over {fig['minutes']} min (bytes as sent, gzipped, headers included)")
    print(f"{'sender':18s} {'KiB/min':>9s} {'samples/s':>9s} {'B/sample':>9s} {'1000 hosts':>11s} {'GB/day':>7s}")
    for n in ("ehprof_pyroscope", "ehprof_otlp", "otel_20hz", "otel_99hz"):
        print(f"{n:18s} {fig[f'{n}_kib_per_min']:9.1f} {fig[f'{n}_samples_per_s']:9.1f} "
              f"{fig[f'{n}_bytes_per_sample']:9.1f} {fig[f'{n}_{HOSTS}_hosts_mbit_s']:7.2f}Mb/s "
              f"{fig[f'{n}_{HOSTS}_hosts_gb_per_day']:7.1f}")
    print(f"\n{'profiler':18s} {'CPU':>7s} {'RSS':>8s} {'peak RSS':>9s}")
    for n in ("ehprof_pyroscope", "ehprof_otlp", "otel_20hz", "otel_99hz"):
        print(f"{n:18s} {fig[f'{n}_cpu_pct']:6.2f}% {fig[f'{n}_rss_mb']:6.1f}MB {fig[f'{n}_peak_rss_mb']:7.1f}MB")
    print(f"ehprof_otlp's own samples the Collector received: {fig['ehprof_otlp_collector_received_pct']} %")


if __name__ == "__main__":
    sys.exit(main())
