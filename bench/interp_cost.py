"""What bench/php_cost.py and bench/ruby_cost.py share: one workload of an
interpreter recorded with its runtime's frames and with --no-RUNTIME (the
same process's native walk alone), runs interleaved, ehprof's own
per-sample BPF time (bench/bpf_time.py) as the median over each run's
samples, the runtime's frames per sample counted in the perf-script output
by their script's suffix; medians over --reps."""
import os
import statistics
import subprocess
import tempfile
import time

import bpf_time


def frames_per_sample(perf_script, suffix):
    """Median frames whose dso ends in `suffix` (".php", ".rb") per sample."""
    counts = []
    for block in open(perf_script).read().split("\n\n"):
        if block.strip():
            counts.append(sum(1 for line in block.split("\n")[1:] if line.rstrip().endswith(suffix + ")")))
    return statistics.median(counts) if counts else 0


def run(args, argv, flags, suffix, tmp):
    """One run: argv (the workload, ending in its duration) recorded with `flags`."""
    work = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(args.warm)
        out = os.path.join(tmp, "interp.perf")
        err = subprocess.run([args.ehprof, "record", "-p", str(work.pid), "-F", str(args.hz), "-d", str(args.seconds),
                              "-o", out] + flags, capture_output=True, text=True, check=True, timeout=120).stderr
    finally:
        work.kill()
        work.wait()
    return bpf_time.bpf_us(err), frames_per_sample(out, suffix)


def measure(args, argv, runtime, suffix):
    """(with the runtime's frames µs, native-only µs, frames a sample), medians."""
    results = {"on": [], "off": []}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            for name in (["on", "off"] if rep % 2 == 0 else ["off", "on"]):
                flags = [] if name == "on" else [f"--no-{runtime}"]
                results[name].append(run(args, argv, flags, suffix, tmp))
    med = statistics.median
    return med(r[0] for r in results["on"]), med(r[0] for r in results["off"]), med(r[1] for r in results["on"])


def add_arguments(ap, root):
    ap.add_argument("--ehprof", default=os.path.join(root, "build", "ehprof"))
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--warm", type=float, default=1)
    ap.add_argument("--hz", type=int, default=499)
    ap.add_argument("--reps", type=int, default=3)
