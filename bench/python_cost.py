#!/usr/bin/env python3
"""BPF time per sample with ~50 Python frames, against native-only.

Runs testdata/python/shapes.py's `deep` shape (a hot loop under about 50
Python frames; Debian forky's python3.14 in a root of that release, as
bench/python_vs_pyspy.py makes it, run under chroot) under
  ehprof record -F HZ              (Python frames walked in the kernel)
  ehprof record -F HZ --no-python  (the same workload, native frames only)
interleaved, REPS times each, per interpreter, and reports the medians of
ehprof's own per-sample BPF time (the program's clock, median over each
run's samples). Needs root. A shared, loaded VM: quote the difference.
Writes bench/results/python_cost.json.

Where the time goes (py_step in bpf/python.bpf.h, bpf/python_frames.bpf.h):
the thread state, from the py_threads cache, checked with one read that
also takes the data stack chunk's bounds (3.11+; 3.11 and 3.12 then read
cframe's current frame); then the frames, read through an 8 KiB window
that reaches down to the chunk's start (3.11+: the ~50 frames here are one
bpf_probe_read_user; 3.10's frame objects are scattered over allocator
pools, about 4 to a page window, one eval call and one py_step per frame),
up to 16 frames a bpf_loop step. Measured with temporary counters on
2026-11-26: 3.12 had 5 reads (8.7 KB) a sample with page windows; each
read of cold frames costs ~150-200 ns here, a repeated read of the same
bytes ~30 ns (the cost is touching the memory); the frame loop's unaligned
u64 loads were 25 instructions each before they became single loads.
Before any window: one bpf_probe_read_user of each frame and of each
thread-state field, +5.6 to 6.9 us.
"""
import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bpf_time  # noqa: E402
import result_file  # noqa: E402
from jvm_runs import close_root  # noqa: E402
from python_vs_pyspy import FORKY_314, make_forky_root  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHAPES = os.path.join(ROOT, "testdata", "python", "shapes.py")


def workload(python, root, seconds):
    if python == FORKY_314:
        return ["chroot", root, "/usr/bin/python3.14", "/tmp/shapes.py", "deep", str(seconds)]
    return [python, SHAPES, "deep", str(seconds)]


def run(ehprof, python, root, seconds, hz, native_only):
    out = f"/tmp/ehprof_python_cost.{os.getpid()}.folded"
    cmd = [ehprof, "record", "-F", str(hz), "-o", out]
    if native_only:
        cmd.append("--no-python")
    cmd += ["--"] + workload(python, root, seconds)
    err = subprocess.run(cmd, capture_output=True, text=True, check=True).stderr
    os.remove(out)
    return bpf_time.bpf_us(err)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--python", action="append",
                    help=f"interpreters (default: 3.10-3.13, Debian's 3.11 and {FORKY_314}, Debian forky's)")
    result_file.add_argument(ap, "python_cost")
    args = ap.parse_args()
    pythons = args.python or ["/root/.pyenv/versions/3.10.13/bin/python3.10",
                              "/root/.pyenv/versions/3.11.7/bin/python3.11",
                              "/root/.pyenv/versions/3.12.1/bin/python3.12",
                              "/root/.pyenv/versions/3.13.0/bin/python3.13", "/usr/bin/python3.11", FORKY_314]
    print(f"# {platform.node()} {platform.release()} {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; median of {args.reps} interleaved runs")
    print(f"{'interpreter':46} {'Python us':>9} {'native us':>9} {'extra us':>8}")
    figures = {}
    for python in pythons:
        with_py, native = [], []
        with tempfile.TemporaryDirectory() as tmp:
            root = make_forky_root(tmp, SHAPES) if python == FORKY_314 else None
            try:
                for _ in range(args.reps):
                    with_py.append(run(args.ehprof, python, root, args.seconds, args.hz, False))
                    native.append(run(args.ehprof, python, root, args.seconds, args.hz, True))
            finally:
                if root:
                    close_root(root)
        a, b = statistics.median(with_py), statistics.median(native)
        print(f"{python:46} {a:9.2f} {b:9.2f} {a - b:8.2f}")
        name = ("debian_" if python.startswith("/usr/") else "") + os.path.basename(python).replace(".", "_")
        if python == FORKY_314:
            name = "python3_14"
        figures[f"{name}_python_us"] = round(a, 2)
        figures[f"{name}_native_us"] = round(b, 2)
        figures[f"{name}_extra_us"] = round(a - b, 2)
    if not args.no_result:
        result_file.write("python_cost", figures, args.note, args.result)


if __name__ == "__main__":
    main()
