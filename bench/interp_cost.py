"""What bench/php_cost.py and bench/ruby_cost.py share: one workload of an
interpreter recorded with its runtime's frames and with --no-RUNTIME (the
same process's native walk alone), runs interleaved, ehprof's own
per-sample BPF time (bench/bpf_time.py) as the median over each run's
samples, the runtime's frames per sample counted in the perf-script output
by their script's suffix; medians over --reps."""
import argparse
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


def measure_all(args, argv, runtime, suffix):
    """{"after": (on µs, native-only µs, frames a sample)} for --ehprof, and
    "before" the same for --before when given; every binary's runs
    interleave with the other's, so both meet the same load."""
    binaries = {"after": args.ehprof}
    if getattr(args, "before", None):
        binaries["before"] = args.before
    runs = [(who, name) for who in binaries for name in ("on", "off")]
    results = {run_key: [] for run_key in runs}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            order = runs if rep % 2 == 0 else list(reversed(runs))
            for who, name in order:
                flags = [] if name == "on" else [f"--no-{runtime}"]
                run_args = argparse.Namespace(**{**vars(args), "ehprof": binaries[who]})
                results[(who, name)].append(run(run_args, argv, flags, suffix, tmp))
    med = statistics.median
    return {who: (med(r[0] for r in results[(who, "on")]), med(r[0] for r in results[(who, "off")]),
                  med(r[1] for r in results[(who, "on")])) for who in binaries}


def measure(args, argv, runtime, suffix):
    """(with the runtime's frames µs, native-only µs, frames a sample), medians."""
    return measure_all(args, argv, runtime, suffix)["after"]


def before_figures(args, argv, runtime, suffix, key):
    """measure_all's "after" figures, and when --before is given the
    before binary's, printed and as result keys before_KEY_bpf_us,
    before_native_bpf_us, before_KEY_added_us (as bench/ruby_cost.py's)."""
    all_figs = measure_all(args, argv, runtime, suffix)
    extra = {}
    if "before" in all_figs:
        on_us, native_us, frames = all_figs["before"]
        print(f"before ({args.before}): {on_us:.2f} us with {frames:.0f} frames; native walk only: {native_us:.2f} us; "
              f"adds {on_us - native_us:.2f} us")
        extra = {f"before_{key}_bpf_us": round(on_us, 2), "before_native_bpf_us": round(native_us, 2),
                 f"before_{key}_added_us": round(on_us - native_us, 2)}
    return all_figs["after"], extra


def add_arguments(ap, root):
    ap.add_argument("--ehprof", default=os.path.join(root, "build", "ehprof"))
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--warm", type=float, default=1)
    ap.add_argument("--hz", type=int, default=499)
    ap.add_argument("--reps", type=int, default=3)
