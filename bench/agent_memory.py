#!/usr/bin/env python3
"""The agent's memory beside a C++ build (issue 22): `ehprof agent -a -F 99`
and the OpenTelemetry eBPF profiler (scripts/install_otel_profiler.sh, at 99
Hz exporting every 5 s to the real Pyroscope started here, as in
bench/overhead.py) each run alone while clang++ compiles this project's
sources (no ccache: clang, libclang-cpp and libLLVM on the stacks, so their
symbols are loaded and used), in interleaved rounds (a different order
each round). Per run, every second: the profiler's RSS; steady RSS is the
median from --steady-from seconds on, peak RSS its VmHWM; CPU is its share
of one CPU over the run. Printed: medians over the rounds, and ehprof's
own breakdown of its RSS (its last --metrics line).

  python3 bench/agent_memory.py                    # 5 rounds of 90 s each
  python3 bench/agent_memory.py --rounds 1 --seconds 40 --only ehprof
  python3 bench/agent_memory.py --only ehprof,base --ehprof-base OLD/ehprof   # before/after
Each ehprof build keeps its own unwind-table cache (under
/var/cache/ehprof/agent_memory_tables, filled by an unmeasured 20 s run of
each before the rounds), so two builds never rebuild each other's tables;
--cold-tables measures a first start instead (every table built, no cache).
Needs root. The machine is shared: absolute CPU figures are noisy. Writes
bench/results/agent_memory.json (medians and ranges per profiler, and the
median of each part of ehprof's metrics line over the rounds).
"""
import argparse
import glob
import hashlib
import os
import random
import re
import shutil
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
from overhead import OTEL, PYROSCOPE, cpu_seconds, peak_rss_mb, start_pyroscope, status_mb  # noqa: E402


# Per-profiler table caches (warm across runs of this bench).
TABLE_CACHES = "/var/cache/ehprof/agent_memory_tables"


class BuildLoad:
    """clang++ -O1 -g over this project's sources, one at a time, until stopped."""

    def __init__(self, work):
        self.dir = tempfile.mkdtemp(prefix="build-", dir=work)
        srcs = sorted(glob.glob(os.path.join(ROOT, "agent", "*", "*.cc")) +
                      glob.glob(os.path.join(ROOT, "symbolizer", "*.cc")))
        inc = ["-I", ROOT, "-I", os.path.join(ROOT, "build")]
        script = "while :; do for f in %s; do clang++ -std=c++20 -O1 -g %s -c $f -o %s/o.o 2>/dev/null " \
                 "&& echo ok; done; done" % (" ".join(srcs), " ".join(inc), self.dir)
        self.out = open(os.path.join(self.dir, "compiled"), "w")
        self.proc = subprocess.Popen(["bash", "-c", script], stdout=self.out, start_new_session=True)

    def stop(self):
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.out.close()
        with open(os.path.join(self.dir, "compiled")) as f:
            return sum(1 for _ in f)


def run_one(name, argv, args, work):
    load = BuildLoad(work)
    time.sleep(2)
    log = open(os.path.join(work, f"{name.replace(' ', '_')}.log"), "w")
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
    points, t0 = [], time.time()
    try:
        while time.time() - t0 < args.seconds:
            time.sleep(1)
            if proc.poll() is not None:
                raise RuntimeError(f"{name} ended early (see {log.name})")
            points.append((time.time() - t0, status_mb(proc.pid, "VmRSS")))
        cpu, peak = cpu_seconds(proc.pid), peak_rss_mb(proc.pid)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        compiled = load.stop()
        log.close()
    steady = [r for t, r in points if t >= args.steady_from]
    with open(log.name) as f:
        metrics = [l.strip() for l in f if "ehprof agent: samples" in l]
    return {"steady_mb": statistics.median(steady), "peak_mb": peak, "cpu_pct": 100 * cpu / args.seconds,
            "compiled": compiled, "metrics": metrics[-1] if metrics else ""}


# ehprof's --metrics line, part by part (MB).
PARTS = [("rss", r"RSS ([\d.]+) MB"), ("heap_in_use", r"heap in use ([\d.]+) MB"),
         ("symbols", r"symbols ([\d.]+) MB"), ("symbol_files", r"MB in (\d+) files"),
         ("address_cache", r"address cache ([\d.]+) MB"), ("interval", r"interval ([\d.]+) MB"),
         ("resolved", r"resolved ([\d.]+) MB"), ("heap_free", r"heap free/stacks ([\d.]+) MB"),
         ("ring_buffer", r"ring buffer ([\d.]+) MB"), ("mapped_files", r"mapped files ([\d.]+) MB"),
         ("jvm_metadata", r"JVM metadata ([\d.]+) MB")]


def metric_parts(line):
    """{part: number} from one metrics line (the parts it has)."""
    out = {}
    for part, pattern in PARTS:
        m = re.search(pattern, line)
        if m:
            out[part] = float(m.group(1))
    return out


def figures_of(runs):
    """Medians and ranges per profiler, and the medians of ehprof's parts."""
    med = statistics.median
    fig = {}
    for n, rs in runs.items():
        for key in ("steady_mb", "peak_mb", "cpu_pct"):
            vals = [r[key] for r in rs]
            fig[f"{n}_{key}"] = round(med(vals), 2)
            fig[f"{n}_{key}_min"] = round(min(vals), 2)
            fig[f"{n}_{key}_max"] = round(max(vals), 2)
        parts = [metric_parts(r["metrics"]) for r in rs if r["metrics"]]
        for part, _ in PARTS:
            vals = [p[part] for p in parts if part in p]
            if vals:
                fig[f"{n}_part_{part}_mb" if part != "symbol_files" else f"{n}_part_{part}"] = round(med(vals), 1)
    return fig


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=90)
    ap.add_argument("--steady-from", type=float, default=30, help="steady RSS: the median from here on")
    ap.add_argument("--hz", type=int, default=99)
    ap.add_argument("--ehprof-base", help="another ehprof binary, run as profiler \"base\" (before/after)")
    ap.add_argument("--only", help="comma-separated: ehprof, base, otel")
    ap.add_argument("--agent-args", default="", help="more ehprof agent arguments")
    ap.add_argument("--cold-tables", action="store_true",
                    help="ehprof and base build every unwind table each run (--no-table-cache): the "
                         "peak of a first start; by default each keeps its own warm table cache")
    result_file.add_argument(ap, "agent_memory")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (BPF)")
    work = tempfile.mkdtemp(prefix="ehprof-agent-memory-")
    server = port = None
    names = ["ehprof", "otel"] + (["base"] if args.ehprof_base else []) if not args.only else args.only.split(",")
    if "base" in names and not args.ehprof_base:
        raise SystemExit("profiler base needs --ehprof-base BIN")
    if "otel" in names:
        if os.access(OTEL, os.X_OK) and os.access(PYROSCOPE, os.X_OK):
            server, port = start_pyroscope(work)
        else:
            print(f"otel: not run ({OTEL} not built: bash scripts/install_otel_profiler.sh)", file=sys.stderr)
            names.remove("otel")
    ehprof_args = ["agent", "-a", "-F", str(args.hz), "--interval", "10", "--output-dir",
                   os.path.join(work, "profiles"), "--metrics-every", "10"] + args.agent_args.split()
    # Each ehprof build keeps its own table cache: two builds whose ABI
    # fingerprints differ would otherwise rewrite one shared cache back and
    # forth, and whichever ran second would build libLLVM's tables cold.
    def tables(binary):
        if args.cold_tables:
            return ["--no-table-cache"]
        tag = hashlib.sha1(os.path.realpath(binary).encode()).hexdigest()[:12]
        return ["--table-cache", os.path.join(TABLE_CACHES, tag)]
    argv = {
        "ehprof": [args.ehprof] + ehprof_args + tables(args.ehprof),
        "base": [args.ehprof_base or ""] + ehprof_args + tables(args.ehprof_base or ""),
        "otel": [OTEL, "-collection-agent", f"127.0.0.1:{port}", "-disable-tls", "-samples-per-second",
                 str(args.hz), "-reporter-interval", "5s"],
    }
    runs = {n: [] for n in names}
    try:
        if not args.cold_tables:
            # Not measured: fills each build's table cache under the same
            # load (after an ABI change its first run would build cold).
            warm = argparse.Namespace(**{**vars(args), "seconds": 20, "steady_from": 0})
            for n in names:
                if n in ("ehprof", "base"):
                    run_one(n, argv[n], warm, work)
                    print(f"warm-up {n}: its table cache filled", file=sys.stderr, flush=True)
        for rnd in range(args.rounds):
            order = list(names)
            random.Random(rnd).shuffle(order)
            for n in order:
                shutil.rmtree(os.path.join(work, "profiles"), ignore_errors=True)
                r = run_one(n, argv[n], args, work)
                runs[n].append(r)
                print(f"round {rnd + 1}/{args.rounds} {n}: steady {r['steady_mb']:.1f} MB, peak "
                      f"{r['peak_mb']:.1f} MB, CPU {r['cpu_pct']:.2f} %, {r['compiled']} files compiled",
                      file=sys.stderr, flush=True)
    finally:
        if server:
            server.terminate()
            server.wait()
    med = statistics.median
    print(f"\nbeside a C++ build, {args.hz} Hz, medians of {args.rounds} interleaved rounds of "
          f"{args.seconds:.0f} s (steady: from {args.steady_from:.0f} s on)")
    print(f"{'profiler':10s} {'steady RSS':>11s} {'peak RSS':>9s} {'CPU':>7s} {'files compiled':>15s}")
    for n, rs in runs.items():
        print(f"{n:10s} {med([r['steady_mb'] for r in rs]):9.1f}MB {med([r['peak_mb'] for r in rs]):7.1f}MB "
              f"{med([r['cpu_pct'] for r in rs]):6.2f}% {med([r['compiled'] for r in rs]):15.0f}")
    for n in ("ehprof", "base"):
        if runs.get(n):
            print(f"{n}'s last metrics line: {runs[n][-1]['metrics']}")
    shutil.rmtree(work, ignore_errors=True)
    if not args.no_result:
        fig = figures_of(runs)
        fig.update({"rounds": args.rounds, "seconds": args.seconds, "steady_from": args.steady_from, "hz": args.hz})
        note = args.note or (f"base: {args.ehprof_base}" if args.ehprof_base else "")
        result_file.write("agent_memory", fig, note, args.result)


if __name__ == "__main__":
    main()
