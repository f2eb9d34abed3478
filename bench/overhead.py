#!/usr/bin/env python3
"""Overhead side by side (issue 13, item 4): fio's throughput alone and under
each system-wide profiler, interleaved, at each frequency.

Profilers (each started before fio and left to warm up, then fio runs):
  ehprof record -a        (to pprof)
  ehprof agent -a         (--output-dir, 5 s intervals)
  perf record -a --call-graph dwarf
  perf record -a -g
  otel                    the OpenTelemetry eBPF profiler, when built
                          (scripts/install_otel_profiler.sh), exporting every
                          5 s to the real Pyroscope server started here
  otel defaults           the same as its users run it: 20 Hz (its default)
Per profiler and frequency, over the repetitions: fio's IOPS relative to the
same round's unprofiled run (median, min-max), the profiler's CPU while fio
ran (steady state, % of one CPU) apart from its start-up CPU (before fio),
peak RSS, BPF time per sample of its perf_event programs
(kernel.bpf_stats_enabled), and bytes written per sample (perf.data) or
per profile.

  python3 bench/overhead.py                       # 99 and 999 Hz, 10 rounds
  python3 bench/overhead.py --hz 999 --reps 3     # a quick look
Needs root. Ratios against the unprofiled run of the same round are what
to quote; absolute figures on a shared VM are noisy.
"""
import argparse
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import result_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIO_JOB = os.path.join(os.environ.get("EHPROF_SHARED", os.path.join(ROOT, "..", "shared")), "eval", "fio-null.job")
OTEL = os.environ.get("EHPROF_OTEL_PROFILER", "/var/cache/ehprof/otel-ebpf-profiler/ebpf-profiler")
PYROSCOPE = "/var/cache/ehprof/pyroscope-v1.12.0/pyroscope"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime + the children's, of pid."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return sum(int(x) for x in fields[11:15]) / TICK


def status_mb(pid, field):
    """A /proc/PID/status size (VmHWM, VmRSS) in MB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) / 1024
    return 0.0


def peak_rss_mb(pid):
    return status_mb(pid, "VmHWM")


def perf_programs():
    """{id: (run_time_ns, run_cnt)} of every loaded perf_event program."""
    out = subprocess.run(["bpftool", "-j", "prog", "show"], capture_output=True, text=True).stdout
    return {p["id"]: (p.get("run_time_ns", 0), p.get("run_cnt", 0))
            for p in json.loads(out or "[]") if p.get("type") == "perf_event"}


def bpf_totals(ids):
    """(run_time_ns, run_cnt) summed over the programs `ids` (a profiler's:
    those that appeared when it started; this bpftool cannot name owners)."""
    progs = perf_programs()
    return (sum(progs[i][0] for i in ids if i in progs), sum(progs[i][1] for i in ids if i in progs))


def fio_iops():
    r = subprocess.run(["fio", "--output-format=json", FIO_JOB], capture_output=True, text=True, check=True)
    return json.loads(r.stdout)["jobs"][0]["read"]["iops"]


class Profiler:
    """One run of a profiler: start, warm up, measure around fio, stop."""

    def __init__(self, name, argv, out, warmup):
        self.name, self.argv, self.out, self.warmup = name, argv, out, warmup

    def run(self):
        before = set(perf_programs())
        proc = subprocess.Popen(self.argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(self.warmup)
        if proc.poll() is not None:
            raise RuntimeError(f"{self.name} ended at start: {proc.stderr.read()[-800:]}")
        own = set(perf_programs()) - before
        cpu0, (ns0, cnt0), t0 = cpu_seconds(proc.pid), bpf_totals(own), time.time()
        iops = fio_iops()
        cpu1, (ns1, cnt1), t1 = cpu_seconds(proc.pid), bpf_totals(own), time.time()
        rss = peak_rss_mb(proc.pid)
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        return {"iops": iops, "startup_cpu_s": cpu0, "steady_cpu_pct": 100 * (cpu1 - cpu0) / (t1 - t0),
                "rss_mb": rss, "bpf_ns": (ns1 - ns0) / (cnt1 - cnt0) if cnt1 > cnt0 else None,
                "samples_bpf": cnt1 - cnt0, "bytes": output_bytes(self.out)}


def output_bytes(path):
    if not path or not os.path.exists(path):
        return 0
    if os.path.isdir(path):
        return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path))
    return os.path.getsize(path)


def perf_samples(data):
    r = subprocess.run(["perf", "report", "-i", data, "--stats"], capture_output=True, text=True)
    for line in r.stdout.splitlines():
        if line.strip().startswith("SAMPLE events:"):
            return int(line.split(":")[1].split()[0])
    return 0


def start_pyroscope(work, ports=None):
    """The real server on 127.0.0.1 for the OTel profiler's exports; ports:
    {"http", "grpc", "ml"} (default fixed ones)."""
    ports = ports or {"http": 4140, "grpc": 9195, "ml": 7996}
    args = [PYROSCOPE, "-server.http-listen-address=127.0.0.1", "-server.grpc-listen-address=127.0.0.1",
            f"-server.http-listen-port={ports['http']}", f"-server.grpc-listen-port={ports['grpc']}",
            "-memberlist.bind-addr=127.0.0.1", "-memberlist.advertise-addr=127.0.0.1",
            f"-memberlist.bind-port={ports['ml']}", f"-memberlist.advertise-port={ports['ml']}",
            "-self-profiling.disable-push=true", "-usage-stats.enabled=false", "-tracing.enabled=false",
            f"-pyroscopedb.data-path={work}/pyroscope"]
    for ring in ("compactor.ring.instance-addr", "distributor.ring.instance-addr",
                 "ingester.lifecycler.addr", "overrides-exporter.ring.instance-addr",
                 "query-frontend.instance-addr", "query-scheduler.ring.instance-addr",
                 "store-gateway.sharding-ring.instance-addr"):
        args.append(f"-{ring}=127.0.0.1")
    log = open(os.path.join(work, "pyroscope.log"), "w")
    proc = subprocess.Popen(args, stdout=log, stderr=log, cwd=work)
    for _ in range(60):
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{ports['http']}/ready", timeout=1)
            return proc, ports["http"]
        except OSError:
            time.sleep(1)
    proc.kill()
    raise RuntimeError("Pyroscope did not become ready")


def profilers(args, hz, work, pyroscope_port):
    e = args.ehprof
    out = lambda n: os.path.join(work, n)
    ps = {
        "ehprof record": ([e, "record", "-a", "-q", "-F", str(hz), "-o", out("ehprof.pb.gz")], out("ehprof.pb.gz")),
        "ehprof agent": ([e, "agent", "-a", "-F", str(hz), "--interval", "5", "--output-dir", out("agent")],
                         out("agent")),
        "perf dwarf": (["perf", "record", "-a", "-q", "-F", str(hz), "--call-graph", "dwarf", "-o",
                        out("dwarf.data")], out("dwarf.data")),
        "perf -g": (["perf", "record", "-a", "-q", "-F", str(hz), "-g", "-o", out("fp.data")], out("fp.data")),
    }
    if pyroscope_port:
        ps["otel"] = ([OTEL, "-collection-agent", f"127.0.0.1:{pyroscope_port}", "-disable-tls",
                       "-samples-per-second", str(hz), "-reporter-interval", "5s"], None)
        # As its users run it: 20 Hz, reports every 5 s (its defaults); the
        # same whatever rate this run compares at.
        ps["otel defaults"] = ([OTEL, "-collection-agent", f"127.0.0.1:{pyroscope_port}", "-disable-tls"], None)
    # The continuous profilers work per interval (ehprof agent symbolizes
    # each after it ends, the OTel profiler reports every 5 s): their first
    # (every binary on the machine, cold caches) is start-up, so fio starts
    # after two intervals for them.
    warm = {n: max(args.warmup, args.agent_warmup) for n in ("ehprof agent", "otel", "otel defaults")}
    return {n: Profiler(n, argv, o, warm.get(n, args.warmup)) for n, (argv, o) in ps.items()
            if not args.only or n in args.only.split(",")}


def clean(path):
    if path and os.path.isdir(path):
        shutil.rmtree(path)
    elif path and os.path.exists(path):
        os.unlink(path)


def measure(args, hz, work, pyroscope_port):
    runs = {}
    for rnd in range(args.reps):
        ps = profilers(args, hz, work, pyroscope_port)
        order = list(ps)
        random.Random(rnd).shuffle(order)  # interleaved, in a different order each round
        base = fio_iops()
        for name in order:
            p = ps[name]
            clean(p.out)
            r = p.run()
            r["ratio"] = r["iops"] / base
            if name.startswith("perf") and p.out:
                r["bytes_per_sample"] = r["bytes"] / max(1, perf_samples(p.out))
            runs.setdefault(name, []).append(r)
            clean(p.out)
        print(f"{hz} Hz round {rnd + 1}/{args.reps} done", file=sys.stderr)
    return runs


def summarize(hz, runs):
    med = lambda xs: statistics.median(xs) if xs else float("nan")
    print(f"\n{hz} Hz (medians of {len(next(iter(runs.values())))} interleaved rounds; fio IOPS vs the "
          "same round's unprofiled run)")
    print(f"{'profiler':14s} {'IOPS ratio':>10s} {'min-max':>13s} {'steady CPU':>10s} {'start-up CPU':>12s} "
          f"{'peak RSS':>9s} {'BPF ns/sample':>13s} {'bytes':>12s}")
    for name, rs in runs.items():
        ratios = [r["ratio"] for r in rs]
        bpf = [r["bpf_ns"] for r in rs if r["bpf_ns"]]
        size = (f"{med([r['bytes_per_sample'] for r in rs]):.0f}/sample" if "bytes_per_sample" in rs[0]
                else (f"{med([r['bytes'] for r in rs]) / 1024:.0f} KiB" if rs[0]["bytes"] else "-"))
        print(f"{name:14s} {med(ratios):10.3f} {min(ratios):6.3f}-{max(ratios):.3f} "
              f"{med([r['steady_cpu_pct'] for r in rs]):9.2f}% {med([r['startup_cpu_s'] for r in rs]):11.2f}s "
              f"{med([r['rss_mb'] for r in rs]):7.0f}MB {med(bpf) if bpf else float('nan'):13.0f} {size:>12s}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--hz", default="99,999")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=float, default=3.0, help="seconds between a profiler's start and fio")
    ap.add_argument("--agent-warmup", type=float, default=11.0,
                    help="the same for ehprof agent and otel: past their first interval")
    ap.add_argument("--only", help="comma-separated profiler names (default: all)")
    ap.add_argument("--json", help="write every run's figures here")
    result_file.add_argument(ap, "overhead")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (perf -a, BPF)")
    work = tempfile.mkdtemp(prefix="ehprof-overhead-")
    old_stats = subprocess.run(["sysctl", "-n", "kernel.bpf_stats_enabled"], capture_output=True,
                               text=True).stdout.strip() or "0"
    subprocess.run(["sysctl", "-qw", "kernel.bpf_stats_enabled=1"])
    server = None
    port = None
    if os.access(OTEL, os.X_OK) and os.access(PYROSCOPE, os.X_OK):
        server, port = start_pyroscope(work)
    else:
        print(f"otel: not run ({OTEL} not built: bash scripts/install_otel_profiler.sh)", file=sys.stderr)
    results = {}
    try:
        for hz in [int(h) for h in args.hz.split(",")]:
            results[hz] = measure(args, hz, work, port)
            summarize(hz, results[hz])
    finally:
        subprocess.run(["sysctl", "-qw", f"kernel.bpf_stats_enabled={old_stats}"])
        if server:
            server.terminate()
            server.wait()
        shutil.rmtree(work, ignore_errors=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    if not args.no_result:
        result_file.write("overhead", result_figures(results), args.note, args.result)
    return 0


def result_figures(results):
    """PROFILER_HZhz_FIGURE medians: iops_ratio, steady_cpu_pct, startup_cpu_s,
    rss_mb, bpf_us (PROFILER: its name, non-alphanumerics as _)."""
    out = {}
    for hz, runs in results.items():
        for name, rs in runs.items():
            key = f"{''.join(c if c.isalnum() else '_' for c in name).strip('_')}_{hz}hz"
            bpf = [r["bpf_ns"] / 1000 for r in rs if r["bpf_ns"]]
            out.update({f"{key}_iops_ratio": round(statistics.median(r["ratio"] for r in rs), 3),
                        f"{key}_steady_cpu_pct": round(statistics.median(r["steady_cpu_pct"] for r in rs), 2),
                        f"{key}_startup_cpu_s": round(statistics.median(r["startup_cpu_s"] for r in rs), 2),
                        f"{key}_rss_mb": round(statistics.median(r["rss_mb"] for r in rs))})
            if bpf:
                out[f"{key}_bpf_us"] = round(statistics.median(bpf), 1)
            if "bytes_per_sample" in rs[0]:
                out[f"{key}_bytes_per_sample"] = round(statistics.median(r["bytes_per_sample"] for r in rs))
            elif rs[0]["bytes"]:
                out[f"{key}_written_kib"] = round(statistics.median(r["bytes"] for r in rs) / 1024)
    return out


if __name__ == "__main__":
    sys.exit(main())
