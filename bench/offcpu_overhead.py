#!/usr/bin/env python3
"""What off-CPU profiling costs a context-switch-heavy load, side by side.

testdata's pingpong (two threads passing a byte over pipes: every round trip
is two blocks and two wake-ups) runs for --seconds, repeatedly, in
interleaved rounds of (both profilers at the same --min-us):
  alone          no profiler
  ehprof         ehprof record --off-cpu -p PINGPONG (CFI walk at switch-in)
  offcputime     libbpf-tools' offcputime -p PINGPONG (frame pointers; Debian
                 package libbpf-tools), when installed
Prints each mode's median round trips/s and its ratio to `alone`. Needs
root. Ratios are what to quote; absolute rates on a shared VM are noisy.
"""
import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile

import result_file
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def rate(out):
    m = re.search(r"pingpong: (\d+) round trips/s", out)
    if not m:
        raise RuntimeError("pingpong printed no rate: " + out[-300:])
    return float(m.group(1))


def start_pingpong(prog, seconds, warmup, cpu):
    # The profiler attaches during the warm-up; the program measures its
    # whole run, so the warm-up is in every mode alike. Both threads on one
    # CPU: every round trip is two context switches there, and what is
    # measured is their cost, not how fast an idle virtual CPU wakes up
    # (across two vCPUs a busy profiler makes pingpong *faster*: the other
    # CPU no longer halts; seen here, 2.1x with ehprof, 1.3x offcputime).
    pin = ["taskset", "-c", str(cpu)] if cpu >= 0 else []
    return subprocess.Popen(pin + [prog, str(seconds + warmup)], stdout=subprocess.PIPE, text=True)


def run_mode(mode, args, tmp):
    p = start_pingpong(args.pingpong, args.seconds, args.warmup, args.cpu)
    prof = None
    if mode == "ehprof":
        cmd = [args.ehprof, "record", "--off-cpu", "-q", "-p", str(p.pid), "-o",
               os.path.join(tmp, "off.folded")]
        cmd += ["--off-cpu-min-us", str(args.min_us)]
        prof = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    elif mode == "offcputime":
        cmd = [args.offcputime, "-p", str(p.pid)]
        cmd += ["-m", str(args.min_us)]
        prof = subprocess.Popen(cmd + [str(int(args.seconds + args.warmup + 2))],
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    out, _ = p.communicate()
    if prof is not None:
        prof.send_signal(signal.SIGINT)
        _, err = prof.communicate(timeout=120)
        if prof.returncode not in (0, -signal.SIGINT):
            raise RuntimeError(f"{mode} failed ({prof.returncode}): {err[-500:]}")
    return rate(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--pingpong", default=os.path.join(ROOT, "build", "testdata", "pingpong"))
    ap.add_argument("--offcputime", default=shutil.which("offcputime") or "/usr/sbin/offcputime")
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--warmup", type=float, default=1.5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cpu", type=int, default=0, help="pin pingpong to this CPU (-1: don't)")
    ap.add_argument("--min-us", type=int, default=10,
                    help="both profilers' threshold (ehprof's default; offcputime's is 1)")
    result_file.add_argument(ap, "offcpu_overhead")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("offcpu_overhead: needs root")
    modes = ["alone", "ehprof"]
    if os.access(args.offcputime, os.X_OK):
        modes.append("offcputime")
    else:
        print(f"offcpu_overhead: no {args.offcputime} (apt install libbpf-tools): left out")
    rates = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            # Interleaved, the order rotating, so drift hits every mode alike.
            order = modes[r % len(modes):] + modes[:r % len(modes)]
            for m in order:
                rates[m].append(run_mode(m, args, tmp))
                time.sleep(0.5)
    base = statistics.median(rates["alone"])
    print(f"pingpong {args.seconds:g} s x {args.rounds} interleaved rounds, pinned to CPU {args.cpu} "
          f"({os.cpu_count()} CPUs, {os.uname().release})")
    figures = {}
    for m in modes:
        med = statistics.median(rates[m])
        print(f"  {m:<11} median {med:>9.0f} round trips/s  ratio to alone {med / base:.3f}"
              f"  (runs: {', '.join(f'{x:.0f}' for x in rates[m])})")
        figures.update({f"{m}_round_trips_per_s": round(med), f"{m}_ratio": round(med / base, 3)})
    if not args.no_result:
        result_file.write("offcpu_overhead", figures, args.note, args.result)


if __name__ == "__main__":
    main()
