#!/usr/bin/env python3
"""ehprof's Python frames against py-spy, sampling the same process at once.

For each interpreter (pyenv's 3.10-3.13 and Debian's /usr/bin/python3.11;
--python forky:python3.14 for Debian forky's python3.14, run under chroot
in a root of that release that scripts/debian_root.sh makes and caches),
starts testdata/python/mix.py (ten functions of weights 1..10 in two
threads), then runs at the same time
  ehprof record -p PID -F HZ -D 500 --srcline -o perf-script
  py-spy record -p PID -r HZ --gil --nonblocking -f raw  (PyPI py-spy 0.4.3)
and compares the share of samples whose innermost Python frame is each
function (py-spy's 10 hottest), over the samples that have a Python frame,
with each profiler's counts summed over the REPS runs. Also: of ehprof's
samples of the process, how many carry a Python frame; and the lines: for
each of the ten functions the line both profilers saw most often in it
(line_mismatches: how many differ) and the largest difference of a
(function, line)'s share.

What each counts: ehprof samples a thread while it runs on a CPU
(cpu-clock). mix.py's two threads share the GIL, so the one running Python
code is the GIL holder, and the other sleeps in take_gil, waking each 5 ms
switch interval to ask for the GIL. py-spy by default reads, at each tick,
every thread the OS shows running or runnable: it also counts the waiting
thread whenever it catches it awake, in the function it gave the GIL up
in, which ehprof (on CPU) does not: py-spy then had about 1.45 samples a
tick of 2 threads, and the shares differed by up to 2.1 points on 3.11.
With --gil py-spy counts the GIL holder only, once a tick: the thread
ehprof sees on the CPU (1.4 points on 3.11, 1.2 on 3.12 in the same
conditions). The one difference left is a GIL holder that is runnable but
waiting for a CPU (a loaded machine): py-spy counts it, ehprof does not;
that is not tied to a function.

The figure is a difference of two sampled estimates: a share p measured on
n samples has a standard error of sqrt(p(1-p)/n) (a 10 % share on 150
samples: 2.4 points), and samples taken in the same 5 ms GIL turn are not
independent. So both sample at 999 Hz by default and the counts of all
runs are pooled before shares are taken (at 99 Hz on a loaded VM ehprof had
90-236 samples a run, py-spy 1,200-1,600, and the differences, 3-8 points,
were that error). Needs root; py-spy from scripts/install_pyspy.sh.
"""
import argparse
import collections
import glob
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import result_file  # noqa: E402
from jvm_runs import close_root, make_debian_root  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIX = os.path.join(ROOT, "testdata", "python", "mix.py")
FORKY_314 = "forky:python3.14"


def make_forky_root(tmp, script=MIX):
    """Debian forky's python3.14 in a fresh root with /proc and /dev bound
    (removed by close_root); script (mix.py) copied to its /tmp."""
    root = make_debian_root("forky", "python3.14", "ehprof-py314-root.", tmp)
    try:
        shutil.copy(script, os.path.join(root, "tmp", os.path.basename(script)))
    except BaseException:
        close_root(root)
        raise
    return root


def workload(python, root, seconds):
    if python == FORKY_314:
        return ["chroot", root, "/usr/bin/python3.14", "/tmp/mix.py", str(seconds)]
    return [python, MIX, str(seconds)]


def interpreters():
    found = []
    for minor in (10, 11, 12, 13):
        found += sorted(glob.glob(f"/root/.pyenv/versions/3.{minor}.*/bin/python3.{minor}"))[:1]
    if os.path.exists("/usr/bin/python3.11"):
        found.append("/usr/bin/python3.11")
    return found


def ehprof_leaves(path):
    """Leaf Python function per sample (only the workload is recorded, -p),
    and (function, line) of it; also (samples, samples with a Python frame).
    --srcline puts a frame's "  file:line" on the line under it."""
    leaves, lines = collections.Counter(), collections.Counter()
    total = with_py = 0
    for block in open(path).read().split("\n\n"):
        rows = block.strip().split("\n")
        if not rows or not rows[0].strip():
            continue
        total += 1
        for i, frame in enumerate(rows[1:], 1):
            m = re.match(r"\s*[0-9a-f]+ (.*) \((.*)\)$", frame)
            if m and m.group(2).endswith(".py"):
                leaves[m.group(1)] += 1
                src = re.match(r"\s+\S+:(\d+)$", rows[i + 1]) if i + 1 < len(rows) else None
                lines[(m.group(1), int(src.group(1)) if src else 0)] += 1
                with_py += 1
                break
    return leaves, lines, total, with_py


def pyspy_leaves(path):
    leaves, lines = collections.Counter(), collections.Counter()
    for line in open(path):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack:
            continue
        leaf = stack.split(";")[-1]
        name = re.sub(r" \(.*\)$", "", leaf)
        at = re.search(r":(\d+)\)$", leaf)
        leaves[name] += int(count)
        lines[(name, int(at.group(1)) if at else 0)] += int(count)
    return leaves, lines


def line_figures(ours, theirs, top):
    """(functions whose hottest line differs, largest |share difference| of
    a (function, line) of the top functions, in points)."""
    ours_s, theirs_s = shares(ours), shares(theirs)
    mismatches, worst = 0, 0.0
    for f in top:
        mine = [(n, k) for k, n in ours.items() if k[0] == f]
        yours = [(n, k) for k, n in theirs.items() if k[0] == f]
        if not mine or not yours or max(mine)[1] != max(yours)[1]:
            mismatches += 1
        for k in {k for _, k in mine} | {k for _, k in yours}:
            worst = max(worst, abs(ours_s.get(k, 0.0) - theirs_s.get(k, 0.0)))
    return mismatches, worst


def shares(c):
    n = sum(c.values()) or 1
    return {k: 100.0 * v / n for k, v in c.items()}


def run_once(ehprof, pyspy, python, root, seconds, hz, tmp):
    work = subprocess.Popen(workload(python, root, seconds + 3))
    try:
        time.sleep(1.0)  # past the interpreter's start
        eh_out = os.path.join(tmp, "ehprof.txt")
        ps_out = os.path.join(tmp, "pyspy.txt")
        eh = subprocess.Popen([ehprof, "record", "-p", str(work.pid), "-F", str(hz), "-D", "500", "--srcline",
                               "-d", str(seconds + 0.5), "-o", eh_out],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        ps = subprocess.run([pyspy, "record", "-p", str(work.pid), "-r", str(hz), "-d", str(int(seconds)),
                             "--gil", "--nonblocking", "-f", "raw", "-o", ps_out],
                            capture_output=True, text=True)
        eh_err = eh.communicate()[1]
        if eh.returncode != 0 or ps.returncode != 0:
            sys.exit(f"a profiler failed:\n{eh_err}\n{ps.stderr}")
    finally:
        work.kill()
        work.wait()
    ours, our_lines, total, with_py = ehprof_leaves(eh_out)
    theirs, their_lines = pyspy_leaves(ps_out)
    return {"ours": ours, "theirs": theirs, "our_lines": our_lines, "their_lines": their_lines,
            "samples": total, "with_python_n": with_py}


def pooled(runs, key):
    c = collections.Counter()
    for r in runs:
        c.update(r[key])
    return c


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--python", action="append",
                    help=f"interpreters (default: 3.10-3.13 + Debian's; {FORKY_314}: Debian forky's, in its root)")
    result_file.add_argument(ap, "python_vs_pyspy")
    args = ap.parse_args()
    pyspy = subprocess.run(["bash", os.path.join(ROOT, "scripts", "install_pyspy.sh")],
                           capture_output=True, text=True, check=True).stdout.strip()
    print(f"# {platform.node()} {platform.release()} {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.seconds:g} s at {args.hz} Hz, "
          f"{args.reps} runs pooled")
    print(f"{'interpreter':42} {'max |diff|':>10} {'with Python':>12} {'samples':>8} {'py-spy':>7}")
    worst = 0.0
    figures = {}
    for python in args.python or interpreters():
        runs = []
        with tempfile.TemporaryDirectory() as tmp:
            root = make_forky_root(tmp) if python == FORKY_314 else None
            try:
                for _ in range(args.reps):
                    runs.append(run_once(args.ehprof, pyspy, python, root, args.seconds, args.hz, tmp))
            finally:
                if root:
                    close_root(root)
        ours, theirs = pooled(runs, "ours"), pooled(runs, "theirs")
        ours_s, theirs_s = shares(ours), shares(theirs)
        top = [k for k, _ in theirs.most_common(10)]
        max_diff = max(abs(ours_s.get(k, 0.0) - theirs_s.get(k, 0.0)) for k in top)
        total = sum(r["samples"] for r in runs)
        with_py = 100.0 * sum(r["with_python_n"] for r in runs) / max(total, 1)
        worst = max(worst, max_diff)
        mismatches, line_diff = line_figures(pooled(runs, "our_lines"), pooled(runs, "their_lines"), top)
        print(f"{python:42} {max_diff:9.2f}p {with_py:11.2f}% {total:8d} {sum(theirs.values()):7d}"
              f"  lines: {mismatches} of {len(top)} differ, max |diff| {line_diff:.2f}p")
        for k in top:
            print(f"    {k:36} ehprof {ours_s.get(k, 0):5.1f}%  py-spy {theirs_s[k]:5.1f}%")
        name = label(python)
        figures[f"{name}_line_mismatches"] = mismatches
        figures[f"{name}_line_max_diff_points"] = round(line_diff, 2)
        figures[f"{name}_max_diff_points"] = round(max_diff, 2)
        figures[f"{name}_with_python_pct"] = round(with_py, 2)
        figures[f"{name}_ehprof_samples"] = total
        figures[f"{name}_pyspy_samples"] = sum(theirs.values())
    print(f"worst max |share difference| over the top 10: {worst:.2f} points")
    figures["worst_max_diff_points"] = round(worst, 2)
    if not args.no_result:
        result_file.write("python_vs_pyspy", figures, args.note, args.result)


def label(python):
    """python3_10 for pyenv's 3.10.x, debian_python3_11 for /usr/bin's,
    forky_python3_14 for forky's."""
    if python == FORKY_314:
        return "forky_python3_14"
    base = os.path.basename(python).replace(".", "_")
    return ("debian_" if python.startswith("/usr/") else "") + base


if __name__ == "__main__":
    main()
