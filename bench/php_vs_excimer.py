#!/usr/bin/env python3
"""ehprof's PHP frames against php-excimer, sampling the same process at once.

Starts testdata/php/mix.php (ten functions of weights 1..10: five plain
ones, a recursive one, a closure array_map calls, a usort callback, a
static and an instance method) under Debian 12's php8.2 with
EXCIMER_OUT set, so php-excimer (Debian's php-excimer, PHP's own sampling
profiler: ExcimerProfiler, EXCIMER_CPU, 1 ms) samples it from inside and
writes its collapsed stacks at exit, while
  ehprof record -p PID -F HZ --srcline -o perf-script
records the same process. Compared: the share of samples whose innermost
user PHP frame is each function (excimer's 10 hottest; excimer shows no
internal functions, so array_map, usort and the like are looked through),
with each profiler's counts summed over the REPS runs; of ehprof's samples
of the PHP thread (not excimer's timer threads) from its first PHP frame on (a process ehprof did not start
is read once its first samples come in), how many carry a PHP frame; and of ehprof's samples whose
leaf PHP frame is wN, how many are on its hot-loop line (the line marked
"loop wN"). Needs root and the test set's php8.2-cli and php-excimer.
"""
import argparse
import collections
import os
import platform
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perf_script  # noqa: E402
import result_file  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIX = os.path.join(ROOT, "testdata", "php", "mix.php")
PHP = "/usr/bin/php8.2"


def loop_lines():
    """function name -> the line of its "loop wN" marker."""
    out = {}
    with open(MIX) as f:
        for i, line in enumerate(f, 1):
            m = re.search(r"// loop (w\d+)$", line.rstrip())
            if m:
                out[m.group(1)] = i
    return out


def plain(name):
    """excimer's and ehprof's names alike: a closure is {closure}, a method
    Class::m."""
    return "{closure}" if name.startswith("{closure") else name


def ehprof_figures(samples, lines):
    leaves = collections.Counter()
    with_php = 0
    on_line = collections.Counter()
    in_fn = collections.Counter()
    judged = 0
    for frames in samples:
        user = [f for f in frames if f.dso.endswith(".php")]
        php = any(perf_script.is_php(f.dso) for f in frames)
        # From the first PHP frame on: ehprof publishes a process it did not
        # start (-p) once its first samples are read, some 100 ms in.
        if not php and not judged:
            continue
        judged += 1
        with_php += php
        if not user:
            continue
        name, _, line = user[0]
        leaves[plain(name)] += 1
        short = name.split("::")[-1]
        if short in lines:
            in_fn[short] += 1
            on_line[short] += line == lines[short]
    return leaves, with_php, judged, on_line, in_fn


def excimer_leaves(path):
    leaves = collections.Counter()
    for line in open(path):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        frames = [f for f in stack.split(";") if f]
        if frames:
            leaves[plain(frames[-1])] += int(count)
    return leaves


def shares(c):
    n = sum(c.values()) or 1
    return {k: 100.0 * v / n for k, v in c.items()}


def run_once(ehprof, seconds, hz, tmp):
    ex_out = os.path.join(tmp, "excimer.txt")
    eh_out = os.path.join(tmp, "ehprof.txt")
    work = subprocess.Popen([PHP, MIX, str(seconds + 1.5)], env=dict(os.environ, EXCIMER_OUT=ex_out))
    try:
        time.sleep(0.5)
        perf_script.record(ehprof, eh_out, work.pid, hz, ["-d", str(seconds), "--srcline"], timeout=seconds + 120)
        work.wait(timeout=seconds + 60)
    finally:
        if work.poll() is None:
            work.kill()
            work.wait()
    # The PHP thread's samples: excimer's CPU timer starts a thread for each
    # of its ticks (SIGEV_THREAD), which runs no PHP.
    return [f for _, tid, f in perf_script.samples(eh_out) if tid == work.pid], excimer_leaves(ex_out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--reps", type=int, default=3)
    result_file.add_argument(ap, "php_vs_excimer")
    args = ap.parse_args()
    lines = loop_lines()
    samples, theirs = [], collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.reps):
            s, t = run_once(args.ehprof, args.seconds, args.hz, tmp)
            samples += s
            theirs.update(t)
    ours, with_php, judged, on_line, in_fn = ehprof_figures(samples, lines)
    ours_s, theirs_s = shares(ours), shares(theirs)
    top = [k for k, _ in theirs.most_common(10)]
    max_diff = max(abs(ours_s.get(k, 0.0) - theirs_s.get(k, 0.0)) for k in top)
    print(f"# {platform.node()} {platform.release()} {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.seconds:g} s at {args.hz} Hz, "
          f"{args.reps} runs pooled; ehprof {len(samples)} samples, excimer {sum(theirs.values())}")
    for k in top:
        print(f"    {k:36} ehprof {ours_s.get(k, 0):5.1f}%  excimer {theirs_s[k]:5.1f}%")
    with_pct = 100.0 * with_php / max(judged, 1)
    line_pct = 100.0 * sum(on_line.values()) / max(sum(in_fn.values()), 1)
    print(f"max |share difference| over excimer's top 10: {max_diff:.2f} points; "
          f"samples with PHP frames {with_pct:.2f} %; leaf samples of w1..w10 on their loop line {line_pct:.2f} %")
    figures = {"max_diff_points": round(max_diff, 2), "with_php_pct": round(with_pct, 2),
               "hot_loop_line_pct": round(line_pct, 2), "ehprof_samples": len(samples),
               "excimer_samples": sum(theirs.values())}
    if not args.no_result:
        result_file.write("php_vs_excimer", figures, args.note, args.result)


if __name__ == "__main__":
    main()
