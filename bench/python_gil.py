#!/usr/bin/env python3
"""Issue 34's GIL question: which share of a GIL-sharing thread is right?

testdata/python/gil_counter.py runs two threads sharing the GIL: the main
thread spins in small_a/small_b, the "counter" thread runs count_words and
gives the GIL up after each round with time.sleep(0). Each repetition
starts it once per interpreter and samples that one process at the same
time with
  ehprof record -p PID -F HZ -o perf-script
  py-spy record -p PID -r HZ --nonblocking --threads -f raw, three at once:
      its default (threads whose /proc/TID/stat state is R: running or
      runnable), --gil (the GIL holder only), --idle (every thread);
      PyPI py-spy 0.4.3
  perf record -e cpu-clock -F HZ -p PID: the kernel's own CPU clock, per
      thread (no PMU here: the software clock), and -a: one per CPU, as
      ehprof's sampler opens them
and, on 3.12, the workload runs with -X perf: CPython's perf trampolines
(each Python call enters through a stub named py::FUNCTION:FILE in
/tmp/perf-PID.map), recorded by that perf with --call-graph dwarf, so
perf names the innermost Python function of each CPU sample itself. (-g,
frame pointers, reaches no trampoline with pyenv's 3.12, built without
them: 0 of 309 samples in a trial; the DWARF walk up libpython's CFI to
the first trampoline is all the leaf function needs.)

and the kernel's own account of each thread, read from
/proc/PID/task/TID/schedstat at the start and end of the window: its
nanoseconds on a CPU ("schedstat", what a CPU clock samples) and on a CPU
or runnable waiting for one ("schedstat_runnable", what a profiler that
counts threads in state R sees; its "samples" are microseconds).

For each tool: the share of each Python function as the innermost Python
frame of the samples that have one, and the counter thread's share of all
the process's samples. Medians over REPS interleaved repetitions go to
bench/results/python_gil.json, with a conclusion. Needs root, perf,
pyenv's 3.11 and 3.12, py-spy from scripts/install_pyspy.sh.
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

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import result_file  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKLOAD = os.path.join(ROOT, "testdata", "python", "gil_counter.py")
FUNCTIONS = ("count_words", "counter_thread", "small_a", "small_b", "main_loop")
PYSPY_MODES = {"pyspy": [], "pyspy_gil": ["--gil"], "pyspy_idle": ["--idle"]}
# "comm [pid/]tid [cpu] time:" (perf pads the comm when no callchain follows);
# frame lines start with a tab.
HEADER = re.compile(r"^ *\S.*?\s+(?:(\d+)/)?(\d+)\s+(?:\[\d+\]\s+)?\d+\.\d+:")
FRAME = re.compile(r"^\s+[0-9a-f]+ (.*) \((.*)\)$")


class Tally:
    """Samples per innermost Python function and per thread."""

    def __init__(self):
        self.leaf = collections.Counter()
        self.tid = collections.Counter()

    def add(self, tid, leaf, n=1):
        self.tid[tid] += n
        if leaf:
            self.leaf[leaf] += n


def read_script(path, python_leaf, pid=None):
    """perf script text (ehprof's or perf's): python_leaf(symbol, dso)
    names a frame's Python function, or None for a native frame. With
    `pid`, only that process's samples (the header has pid/tid)."""
    t, tid, leaf = Tally(), None, None
    for line in open(path, errors="replace"):
        m = HEADER.match(line)
        if m:
            if tid is not None:
                t.add(tid, leaf)
            tid, leaf = int(m.group(2)), None
            if pid is not None and m.group(1) != str(pid):
                tid = None
            continue
        f = FRAME.match(line)
        if f and tid is not None and leaf is None:
            leaf = python_leaf(f.group(1), f.group(2))
    if tid is not None:
        t.add(tid, leaf)
    return t


def ehprof_leaf(symbol, dso):
    return symbol if dso.endswith(".py") else None


def trampoline_leaf(symbol, dso):
    # "py::small_b:/path/gil_counter.py+0x5"
    return symbol[4:].split(":", 1)[0] if symbol.startswith("py::") else None


def read_pyspy(path):
    t = Tally()
    for line in open(path, errors="replace"):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        m = re.match(r"thread \((\d+)\)", stack)
        if not m or not count.isdigit():
            continue
        frames = stack.split(";")
        leaf = re.sub(r" \(.*\)$", "", frames[-1]) if len(frames) > 1 else None
        t.add(int(m.group(1)), leaf, int(count))
    return t


def schedstat(pid):
    """tid -> (ns on a CPU, ns runnable waiting for one), from the kernel's
    /proc/PID/task/TID/schedstat."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                run, wait = f.read().split()[:2]
            out[int(tid)] = (int(run), int(wait))
        except (OSError, ValueError):
            pass  # a thread that ended
    return out


def schedstat_tallies(before, after):
    """The thread shares of on-CPU time ("schedstat": what a CPU clock
    samples) and of time running or runnable ("schedstat_runnable": what
    reading the threads' state R counts), as Tallies in microseconds."""
    cpu, runnable = Tally(), Tally()
    for tid, (run, wait) in after.items():
        run0, wait0 = before.get(tid, (0, 0))
        cpu.add(tid, None, (run - run0) // 1000)
        runnable.add(tid, None, (run - run0 + wait - wait0) // 1000)
    return {"schedstat": cpu, "schedstat_runnable": runnable}


def perf_record(python_label, pid, hz, seconds, out):
    """perf -p: a cpu-clock event per thread of the process, which counts
    only while that thread runs. perf_cpus: one per CPU (-a), as ehprof's
    sampler is, keeping the samples of the process."""
    if out.endswith("perf_cpus"):
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(hz), "-a", "-o", out]
    else:
        cmd = ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(hz), "-p", str(pid), "-o", out]
    if python_label == "python3_12_x_perf" and not out.endswith("perf_cpus"):
        cmd += ["--call-graph", "dwarf,8192"]
    return subprocess.Popen(cmd + ["--", "sleep", str(seconds)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)


def run_once(args, pyspy, python, label, tmp):
    extra = ["-X", "perf"] if label == "python3_12_x_perf" else []
    work = subprocess.Popen([python] + extra + [WORKLOAD, str(args.seconds + 3)])
    out = {name: os.path.join(tmp, name) for name in ["ehprof", "perf", "perf_cpus", *PYSPY_MODES]}
    try:
        time.sleep(1.0)  # past the interpreter's start and the thread's
        procs = {"ehprof": subprocess.Popen(
            [args.ehprof, "record", "-q", "-p", str(work.pid), "-F", str(args.hz), "-d", str(args.seconds),
             "--format", "perf-script", "-o", out["ehprof"]], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True)}
        for name in ("perf", "perf_cpus"):
            procs[name] = perf_record(label, work.pid, args.hz, args.seconds, out[name])
        for mode, flags in PYSPY_MODES.items():
            procs[mode] = subprocess.Popen(
                [pyspy, "record", "-p", str(work.pid), "-r", str(args.hz), "-d", str(int(args.seconds)),
                 "--nonblocking", "--threads", "-f", "raw", "-o", out[mode]] + flags,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        before = schedstat(work.pid)
        time.sleep(args.seconds)
        sched = schedstat_tallies(before, schedstat(work.pid))
        lost = 0
        for name, p in procs.items():
            err = p.communicate(timeout=args.seconds + 60)[1]
            if p.returncode != 0:
                sys.exit(f"{name} failed ({label}):\n{err}")
            if name == "ehprof":
                m = re.search(r"\((\d+) lost\)", err)
                lost = int(m.group(1)) if m else -1
        for name in ("perf", "perf_cpus"):
            with open(out[name] + ".txt", "w") as f:
                subprocess.run(["perf", "script", "-i", out[name], "-F", "comm,pid,tid,time,ip,sym,dso"], stdout=f,
                               stderr=subprocess.DEVNULL, check=True, timeout=600)
    finally:
        work.kill()
        work.wait()
    tallies = {"ehprof": read_script(out["ehprof"], ehprof_leaf)}
    for name in ("perf", "perf_cpus"):
        tallies[name] = read_script(out[name] + ".txt", trampoline_leaf, work.pid)
    tallies.update({mode: read_pyspy(out[mode]) for mode in PYSPY_MODES})
    tallies.update(sched)
    return work.pid, tallies, lost


def shares(pid, t):
    """Percent of each function among samples with a Python leaf, and the
    counter thread's (every thread but the main one) of all samples."""
    with_leaf = sum(t.leaf.values())
    total = sum(t.tid.values())
    s = {f"fn_{fn}_pct": 100.0 * t.leaf[fn] / with_leaf for fn in FUNCTIONS} if with_leaf else {}
    s["thread_counter_pct"] = 100.0 * sum(n for tid, n in t.tid.items() if tid != pid) / total if total else 0.0
    s["samples"] = total
    s["with_python_leaf"] = with_leaf
    return s


def interpreters():
    found = {}
    for minor, label in ((11, "python3_11"), (12, "python3_12_x_perf")):
        paths = sorted(glob.glob(f"/root/.pyenv/versions/3.{minor}.*/bin/python3.{minor}"))
        if paths:
            found[label] = paths[0]
    return found


def conclusion(fig, labels):
    parts, worst, to_cpu, to_runnable = [], 0.0, 0.0, 0.0
    for label in labels:
        g = lambda tool, key="thread_counter_pct": fig.get(f"{label}_{tool}_{key}", float("nan"))  # noqa: E731
        worst = max(worst, abs(g("ehprof") - g("perf")), abs(g("ehprof") - g("perf_cpus")))
        to_cpu = max(to_cpu, abs(g("pyspy") - g("schedstat")))
        to_runnable = max(to_runnable, abs(g("pyspy") - g("schedstat_runnable")))
        text = (f"{label}: the counter thread has {g('ehprof'):.1f} % of ehprof's samples, {g('perf'):.1f} % of "
                f"perf's per-thread cpu-clock, {g('perf_cpus'):.1f} % of its per-CPU one, {g('schedstat'):.1f} % of "
                f"the process's CPU time (schedstat; {g('schedstat_runnable'):.1f} % of its time running or "
                f"runnable), py-spy {g('pyspy'):.1f} % (--gil {g('pyspy_gil'):.1f} %, --idle "
                f"{g('pyspy_idle'):.1f} %)")
        if label.endswith("x_perf"):
            leaf = lambda tool: g(tool, "fn_count_words_pct") + g(tool, "fn_counter_thread_pct")  # noqa: E731
            worst = max(worst, abs(leaf("ehprof") - leaf("perf")))
            text += (f"; its functions as the innermost Python frame: ehprof {leaf('ehprof'):.1f} %, the -X perf "
                     f"trampolines {leaf('perf'):.1f} %, py-spy {leaf('pyspy'):.1f} %")
        parts.append(text)
    return ("; ".join(parts) + f". ehprof is within {worst:.1f} points of perf's CPU clocks and of the -X perf "
            "trampolines: all sample CPU time. py-spy's default counts a thread whose /proc stat state is R, "
            f"running or runnable (woken in time.sleep(0) to take the GIL, or waiting for a CPU): its figure is "
            f"within {to_runnable:.1f} points of the thread's running-or-runnable share, {to_cpu:.1f} of its "
            "CPU-time share; --gil counts only the GIL holder, --idle every thread.")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--hz", type=int, default=499)
    ap.add_argument("--reps", type=int, default=3)
    result_file.add_argument(ap, "python_gil")
    args = ap.parse_args()
    pyspy = subprocess.run(["bash", os.path.join(ROOT, "scripts", "install_pyspy.sh")],
                           capture_output=True, text=True, check=True).stdout.strip()
    pythons = interpreters()
    print(f"# {platform.node()} {platform.release()} {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.seconds:g} s at {args.hz} Hz, "
          f"{args.reps} interleaved runs, medians")
    runs = collections.defaultdict(list)  # (label, tool) -> [shares]
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.reps):
            for label, python in pythons.items():
                pid, tallies, lost = run_once(args, pyspy, python, label, tmp)
                for tool, t in tallies.items():
                    runs[(label, tool)].append(shares(pid, t))
                runs[(label, "ehprof")][-1]["lost"] = lost
    fig = {}
    for (label, tool), rs in runs.items():
        for key in rs[0]:
            fig[f"{label}_{tool}_{key}"] = round(statistics.median(r.get(key, 0.0) for r in rs), 2)
        line = "  ".join(f"{k.replace('_pct', '')} {fig[f'{label}_{tool}_{k}']:5.1f}%" for k in rs[0]
                         if k.endswith("_pct"))
        print(f"{label:18} {tool:11} {line}  samples {fig[f'{label}_{tool}_samples']:g}")
    text = conclusion(fig, pythons)
    print(text)
    if not args.no_result:
        result_file.write("python_gil", fig, args.note, args.result, extra={"conclusion": text})


if __name__ == "__main__":
    main()
