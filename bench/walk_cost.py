#!/usr/bin/env python3
"""BPF time per sample of the CFI walk against the frame-pointer walk, at
equal stack depth, side by side in one run.

The peer is the frame-pointer walk (what bpf_get_stack and perf -g do) over
the same program built with frame pointers: testdata/deep_recursion_fp
against deep_recursion (the same source, -fomit-frame-pointer), both
stripped, recursing to the same depth. Also Debian's fio (about 10 frames;
its frame-pointer walk stops after a frame or two: fio has no frame
pointers, so that row's ratio compares a full walk with a failed one).

Each configuration runs `ehprof record -F 999` for --seconds, --reps times,
interleaved (every configuration once per round), and the kernel's own
per-sample time (the sampler's bpf_ns, as in ehprof's summary) is taken as
the median of the rounds' medians. That clock stops before the sample is
copied into the ring buffer: the times hold the user and kernel stack
walks, not the copy. Needs root (BPF). Writes bench/results/walk_cost.json
(per row: KEY_cfi_us, KEY_fp_us, KEY_ratio, KEY_cfi_depth; KEY is fio or
depth_N).

  python3 bench/walk_cost.py [--reps 5] [--seconds 3] [--depths 8,38,100]
"""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile

import result_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SUMMARY = re.compile(r"BPF time per sample: median ([0-9.]+) us, p90 ([0-9.]+) us")


def run(ehprof, args, cmd, out):
    # --folded-annotate: user_depth tells kernel frames by their _[k].
    r = subprocess.run([ehprof, "record", "-F", "999", "-q", "--folded-annotate", *args, "-o", out,
                        "--", *cmd],
                       capture_output=True, text=True, timeout=300)
    m = SUMMARY.search(r.stderr)
    if r.returncode != 0 or not m:
        sys.exit(f"walk_cost: {' '.join(cmd)} failed ({r.returncode}): {r.stderr[-600:]}")
    return float(m.group(1)), float(m.group(2)), user_depth(out)


def user_depth(folded):
    """Mean user frames a sample, from folded output (kernel frames end _[k])."""
    frames = samples = 0
    with open(folded) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            n = int(count)
            user = [x for x in stack.split(";")[1:] if not x.endswith("_[k]")]
            frames += n * len(user)
            samples += n
    return frames / samples if samples else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--testdata", default=os.path.join(ROOT, "build", "testdata"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--depths", default="8,38,100", help="recursion depths (plus ~4 frames of main and libc)")
    result_file.add_argument(ap, "walk_cost")
    a = ap.parse_args()

    td = a.testdata
    fio_job = os.path.join(ROOT, "testdata", "workloads", "fio-cpu.job")
    keys = {"fio (CFI) vs fio (FP: no frame pointers)": "fio"}
    pairs = [("fio (CFI) vs fio (FP: no frame pointers)",
              ([], ["fio", "--output=/dev/null", f"--runtime={int(a.seconds)}", fio_job]),
              (["--unwinder", "fp"], ["fio", "--output=/dev/null", f"--runtime={int(a.seconds)}", fio_job]))]
    for d in [int(x) for x in a.depths.split(",") if x]:
        keys[f"deep_recursion depth {d}: CFI vs FP build"] = f"depth_{d}"
        pairs.append((f"deep_recursion depth {d}: CFI vs FP build",
                      ([], [os.path.join(td, "deep_recursion.stripped"), str(a.seconds), str(d)]),
                      (["--unwinder", "fp"], [os.path.join(td, "deep_recursion_fp.stripped"), str(a.seconds), str(d)])))
    results = {name: {"cfi": [], "fp": []} for name, _, _ in pairs}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "p.folded")
        for rep in range(a.reps):
            for name, cfi, fp in pairs:
                for kind, (args, cmd) in (("cfi", cfi), ("fp", fp)):
                    results[name][kind].append(run(a.ehprof, args, cmd, out))
            print(f"walk_cost: round {rep + 1}/{a.reps} done", file=sys.stderr, flush=True)
    figures = {"reps": a.reps, "seconds": a.seconds}
    print(f"{'workload':44} {'CFI med us':>10} {'p90':>6} {'depth':>6} {'FP med us':>10} {'p90':>6} "
          f"{'depth':>6} {'CFI/FP':>7}")
    for name, r in results.items():
        c_med = statistics.median(x[0] for x in r["cfi"])
        c_p90 = statistics.median(x[1] for x in r["cfi"])
        c_d = statistics.median(x[2] for x in r["cfi"])
        f_med = statistics.median(x[0] for x in r["fp"])
        f_p90 = statistics.median(x[1] for x in r["fp"])
        f_d = statistics.median(x[2] for x in r["fp"])
        print(f"{name:44} {c_med:10.2f} {c_p90:6.2f} {c_d:6.1f} {f_med:10.2f} {f_p90:6.2f} {f_d:6.1f} "
              f"{c_med / f_med:7.2f}")
        k = keys[name]
        figures.update({f"{k}_cfi_us": c_med, f"{k}_fp_us": f_med, f"{k}_ratio": round(c_med / f_med, 2),
                        f"{k}_cfi_depth": round(c_d, 1), f"{k}_fp_depth": round(f_d, 1)})
    print(f"({a.reps} interleaved rounds of {a.seconds} s at 999 Hz; medians of the rounds' medians; "
          "times include the kernel stack walk, not the ring-buffer copy)")
    if not a.no_result:
        result_file.write("walk_cost", figures, a.note, a.result)


if __name__ == "__main__":
    main()
