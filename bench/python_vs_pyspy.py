#!/usr/bin/env python3
"""ehprof's Python frames against py-spy, sampling the same process at once.

For each interpreter (pyenv's 3.10-3.13 and Debian's /usr/bin/python3.11),
starts testdata/python/mix.py (ten functions of weights 1..10 in two
threads), then runs at the same time
  ehprof record -p PID -F HZ -D 500 -o perf-script
  py-spy record -p PID -r HZ --nonblocking -f raw      (PyPI py-spy 0.4.3)
and compares the share of samples whose innermost Python frame is each
function (py-spy's 10 hottest), over the samples that have a Python frame.
Also: of ehprof's samples of the process, how many carry a Python frame.
Repeats REPS times per interpreter; prints the median of each figure.
Needs root; py-spy from scripts/install_pyspy.sh.
"""
import argparse
import collections
import glob
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIX = os.path.join(ROOT, "testdata", "python", "mix.py")


def interpreters():
    found = []
    for minor in (10, 11, 12, 13):
        found += sorted(glob.glob(f"/root/.pyenv/versions/3.{minor}.*/bin/python3.{minor}"))[:1]
    if os.path.exists("/usr/bin/python3.11"):
        found.append("/usr/bin/python3.11")
    return found


def ehprof_leaves(path):
    """Leaf Python function per sample (only the workload is recorded, -p);
    also (samples, samples with a Python frame)."""
    leaves = collections.Counter()
    total = with_py = 0
    for block in open(path).read().split("\n\n"):
        lines = block.strip().split("\n")
        if not lines or not lines[0].strip():
            continue
        total += 1
        for frame in lines[1:]:
            m = re.match(r"\s*[0-9a-f]+ (.*) \((.*)\)$", frame)
            if m and m.group(2).endswith(".py"):
                leaves[m.group(1)] += 1
                with_py += 1
                break
    return leaves, total, with_py


def pyspy_leaves(path):
    leaves = collections.Counter()
    for line in open(path):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack:
            continue
        leaf = stack.split(";")[-1]
        leaves[re.sub(r" \(.*\)$", "", leaf)] += int(count)
    return leaves


def shares(c):
    n = sum(c.values()) or 1
    return {k: 100.0 * v / n for k, v in c.items()}


def run_once(ehprof, pyspy, python, seconds, hz, tmp):
    work = subprocess.Popen([python, MIX, str(seconds + 3)])
    try:
        time.sleep(1.0)  # past the interpreter's start
        eh_out = os.path.join(tmp, "ehprof.txt")
        ps_out = os.path.join(tmp, "pyspy.txt")
        eh = subprocess.Popen([ehprof, "record", "-p", str(work.pid), "-F", str(hz), "-D", "500",
                               "-d", str(seconds + 0.5), "-o", eh_out],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        ps = subprocess.run([pyspy, "record", "-p", str(work.pid), "-r", str(hz), "-d", str(int(seconds)),
                             "--nonblocking", "-f", "raw", "-o", ps_out],
                            capture_output=True, text=True)
        eh_err = eh.communicate()[1]
        if eh.returncode != 0 or ps.returncode != 0:
            sys.exit(f"a profiler failed:\n{eh_err}\n{ps.stderr}")
    finally:
        work.kill()
        work.wait()
    ours, total, with_py = ehprof_leaves(eh_out)
    theirs = pyspy_leaves(ps_out)
    ours_s, theirs_s = shares(ours), shares(theirs)
    top = [k for k, _ in theirs.most_common(10)]
    diffs = {k: ours_s.get(k, 0.0) - theirs_s.get(k, 0.0) for k in top}
    return {"diffs": diffs, "ours": ours_s, "theirs": theirs_s, "top": top,
            "with_python": 100.0 * with_py / max(total, 1), "samples": total,
            "pyspy_samples": sum(theirs.values())}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--hz", type=int, default=99)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--python", action="append", help="interpreters (default: 3.10-3.13 + Debian's)")
    args = ap.parse_args()
    pyspy = subprocess.run(["bash", os.path.join(ROOT, "scripts", "install_pyspy.sh")],
                           capture_output=True, text=True, check=True).stdout.strip()
    print(f"# {platform.node()} {platform.release()} {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.seconds:g} s at {args.hz} Hz, "
          f"median of {args.reps}")
    print(f"{'interpreter':42} {'max |diff|':>10} {'with Python':>12} {'samples':>8} {'py-spy':>7}")
    worst = 0.0
    for python in args.python or interpreters():
        runs = []
        with tempfile.TemporaryDirectory() as tmp:
            for _ in range(args.reps):
                runs.append(run_once(args.ehprof, pyspy, python, args.seconds, args.hz, tmp))
        max_diff = statistics.median(max(abs(d) for d in r["diffs"].values()) for r in runs)
        with_py = statistics.median(r["with_python"] for r in runs)
        worst = max(worst, max_diff)
        print(f"{python:42} {max_diff:9.2f}p {with_py:11.2f}% "
              f"{statistics.median(r['samples'] for r in runs):8.0f} "
              f"{statistics.median(r['pyspy_samples'] for r in runs):7.0f}")
        last = runs[-1]
        for k in last["top"]:
            print(f"    {k:36} ehprof {last['ours'].get(k, 0):5.1f}%  py-spy {last['theirs'][k]:5.1f}%")
    print(f"worst median max |share difference| over the top 10: {worst:.2f} points")


if __name__ == "__main__":
    main()
