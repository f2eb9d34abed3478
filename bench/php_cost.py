#!/usr/bin/env python3
"""BPF time per sample of the PHP walk: Debian 12's php8.2 running
testdata/php/mix.php's deep mode (deep() recursing 50 PHP frames, spinning
at the bottom, all in one execute_ex call), recorded with its PHP frames
and with --no-php (the same process's native walk alone: execute_ex and its
callers), so the difference is what the PHP walk adds per sample. Each run:
the workload starts, after --warm seconds `ehprof record -p PID -F HZ -d
SECONDS` records it; the figure is ehprof's own per-sample BPF time
(bpf/*: the sampler's clock, median over the run's samples, as
bench/jvm_node_cost.py reads it). Runs interleave; figures are medians
over --reps. PHP frames per sample: the median count in the run's
perf-script output. Needs root and php8.2-cli. Writes
bench/results/php_cost.json.
  python3 bench/php_cost.py [--reps 3] [--seconds 3]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import bpf_time  # noqa: E402
import result_file  # noqa: E402

MIX = os.path.join(ROOT, "testdata", "php", "mix.php")


def php_frames(perf_script):
    """Median PHP frames (frames whose dso is a .php file) per sample."""
    counts = []
    for block in open(perf_script).read().split("\n\n"):
        if block.strip():
            counts.append(sum(1 for line in block.split("\n")[1:] if line.rstrip().endswith(".php)")))
    return statistics.median(counts) if counts else 0


def run(args, flags, tmp):
    work = subprocess.Popen([args.php, MIX, "deep", str(args.warm + args.seconds + 5)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(args.warm)
        out = os.path.join(tmp, "php.perf")
        err = subprocess.run([args.ehprof, "record", "-p", str(work.pid), "-F", str(args.hz), "-d", str(args.seconds),
                              "-o", out] + flags, capture_output=True, text=True, check=True, timeout=120).stderr
    finally:
        work.kill()
        work.wait()
    return bpf_time.bpf_us(err), php_frames(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--php", default="/usr/bin/php8.2")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--warm", type=float, default=1)
    ap.add_argument("--hz", type=int, default=499)
    ap.add_argument("--reps", type=int, default=3)
    result_file.add_argument(ap, "php_cost")
    args = ap.parse_args()
    results = {"php": [], "native": []}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            order = ["php", "native"] if rep % 2 == 0 else ["native", "php"]
            for name in order:
                results[name].append(run(args, [] if name == "php" else ["--no-php"], tmp))
    med = statistics.median
    php_us, native_us = med(r[0] for r in results["php"]), med(r[0] for r in results["native"])
    frames = med(r[1] for r in results["php"])
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.2f}; "
          f"median of {args.reps} interleaved runs, {args.hz} Hz")
    print(f"php8.2 deep, PHP frames ({frames:.0f} a sample): {php_us:.2f} us; native walk only: {native_us:.2f} us; "
          f"the PHP walk adds {php_us - native_us:.2f} us")
    figures = {"php_bpf_us": round(php_us, 2), "native_bpf_us": round(native_us, 2),
               "php_added_us": round(php_us - native_us, 2), "php_frames": frames, "hz": args.hz,
               "reps": args.reps}
    if not args.no_result:
        result_file.write("php_cost", figures, args.note, args.result)


if __name__ == "__main__":
    main()
