#!/usr/bin/env python3
"""BPF time per sample of the tail-call walk (the build kernels without
bpf_loop load, bpf/tailwalk.bpf.h) against the bpf_loop walk, on the same
kernel, the same program and the same depth, side by side in one run.

The tail-call build runs here through EHPROF_PRETEND_OLD_KERNEL=1 (ehprof
then takes bpf_loop, bpf_task_pt_regs and bpf_get_current_task_btf as
absent). The workload is testdata/deep_recursion.stripped at each --depths
(plus ~4 frames of main and libc). Each configuration runs `ehprof record
-F 999` for --seconds, --reps times, interleaved (every configuration once
per round); the figure is the sampler's own per-sample time (bpf_ns, as in
ehprof's summary: from the first program's start to the ring-buffer copy,
all tail-called programs included), the median of the rounds' medians.
Needs root (BPF).

  python3 bench/tail_call_cost.py [--reps 5] [--seconds 3] [--depths 10,40]
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import result_file  # noqa: E402
from walk_cost import SUMMARY, user_depth  # noqa: E402


def run(ehprof, cmd, out, tail_calls):
    env = dict(os.environ)
    env.pop("EHPROF_PRETEND_OLD_KERNEL", None)
    if tail_calls:
        env["EHPROF_PRETEND_OLD_KERNEL"] = "1"
    r = subprocess.run([ehprof, "record", "-F", "999", "-q", "--folded-annotate", "-o", out, "--", *cmd],
                       capture_output=True, text=True, timeout=300, env=env)
    m = SUMMARY.search(r.stderr)
    if r.returncode != 0 or not m:
        sys.exit(f"tail_call_cost: {' '.join(cmd)} failed ({r.returncode}): {r.stderr[-600:]}")
    return float(m.group(1)), float(m.group(2)), user_depth(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--testdata", default=os.path.join(ROOT, "build", "testdata"))
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--depths", default="10,40", help="recursion depths")
    result_file.add_argument(ap, "tail_call_cost")
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("tail_call_cost: needs root (BPF)")
    prog = os.path.join(a.testdata, "deep_recursion.stripped")
    depths = [int(x) for x in a.depths.split(",") if x]
    results = {d: {"loop": [], "tail": []} for d in depths}
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "p.folded")
        for rep in range(a.reps):
            for d in depths:
                for kind in ("loop", "tail"):
                    results[d][kind].append(run(a.ehprof, [prog, str(a.seconds), str(d)], out, kind == "tail"))
            print(f"tail_call_cost: round {rep + 1}/{a.reps} done", file=sys.stderr, flush=True)
    print(f"{'deep_recursion depth':>20} {'bpf_loop med us':>15} {'p90':>6} {'frames':>6} "
          f"{'tail calls med us':>17} {'p90':>6} {'frames':>6} {'tail/loop':>9}")
    figures = {}
    for d, r in results.items():
        med = {k: statistics.median(x[0] for x in v) for k, v in r.items()}
        p90 = {k: statistics.median(x[1] for x in v) for k, v in r.items()}
        depth = {k: statistics.median(x[2] for x in v) for k, v in r.items()}
        print(f"{d:>20} {med['loop']:15.2f} {p90['loop']:6.2f} {depth['loop']:6.1f} "
              f"{med['tail']:17.2f} {p90['tail']:6.2f} {depth['tail']:6.1f} {med['tail'] / med['loop']:9.2f}")
        for k in ("loop", "tail"):
            figures.update({f"depth_{d}_{k}_us": round(med[k], 2), f"depth_{d}_{k}_p90_us": round(p90[k], 2),
                            f"depth_{d}_{k}_frames": round(depth[k], 1)})
        figures[f"depth_{d}_tail_over_loop"] = round(med['tail'] / med['loop'], 2)
    print(f"({a.reps} interleaved rounds of {a.seconds} s at 999 Hz on kernel {os.uname().release}; "
          "medians of the rounds' medians; times include the kernel stack and the ring-buffer copy)")
    if not a.no_result:
        result_file.write("tail_call_cost", figures, a.note, a.result)


if __name__ == "__main__":
    main()
