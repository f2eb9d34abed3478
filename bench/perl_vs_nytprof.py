#!/usr/bin/env python3
"""ehprof's Perl frames against Devel::NYTProf, measuring the same run.

Runs testdata/perl/hot.pl in its fork mode (its two threads' subs in two
processes: NYTProf profiles one thread of a process only) under Debian 12's
perl 5.36 with -d:NYTProf (Debian's libdevel-nytprof-perl; its sub
profiler alone: stmts=0, slowops=0, one file a process: addpid=1; its
clock the process's CPU time, clock=2, as ehprof samples CPU time: by
default it times wall clock, which a loaded machine's waits fill), while
  ehprof record -F HZ --srcline -- perl -d:NYTProf hot.pl fork SECONDS
samples the same processes. Compared: each sub's share of the run,
NYTProf's from its exclusive sub times (both processes' files, anonymous
subs' "[file:line]" and BEGIN's "@line" left off), ehprof's from the
samples whose innermost Perl frame is that sub (the main program's code,
"<main>", is NYTProf's main::RUNTIME; a sample in List::Util's XS code or
a reduce block it runs is List::Util::reduce's, as NYTProf counts the
block's time in the XSUB that runs it), over NYTProf's ten hottest subs;
summed over --reps runs. Needs root, perl and libdevel-nytprof-perl.
Writes bench/results/perl_vs_nytprof.json.
  python3 bench/perl_vs_nytprof.py [--reps 2] [--seconds 8]
"""
import argparse
import collections
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import result_file  # noqa: E402

HOT = os.path.join(ROOT, "testdata", "perl", "hot.pl")
DUMP = ("use Devel::NYTProf::Data; my $m = Devel::NYTProf::Data->new({filename => $ARGV[0], quiet => 1})"
        "->subname_subinfo_map; printf \"%s\\t%.9f\\n\", $_, $m->{$_}->excl_time for keys %$m")


def nytprof_times(path):
    out = subprocess.run(["perl", "-e", DUMP, path], capture_output=True, text=True, check=True, timeout=120).stdout
    times = collections.Counter()
    for line in out.splitlines():
        name, excl = line.rsplit("\t", 1)
        times[re.sub(r"(\[.*\]|@\d+)$", "", name)] += float(excl)
    return times


def ehprof_counts(path):
    """Samples by the sub their innermost Perl frame is (as NYTProf names it)."""
    counts = collections.Counter()
    for block in open(path).read().split("\n\n"):
        frames = re.findall(r"^\t\s*\S+ (.*) \((.*)\)$", block, re.M)
        perl = [i for i, (_, dso) in enumerate(frames) if dso.endswith((".pl", ".pm"))]
        if not perl:
            continue
        # NYTProf names anonymous subs' globs "__ANON__[file:line]" itself.
        sym = re.sub(r"\[.*\]$", "", frames[perl[0]][0])
        if any("List/Util" in dso for _, dso in frames[:perl[0]]) or (
                sym == "main::__ANON__" and any("List/Util" in dso for _, dso in frames)):
            sym = "List::Util::reduce"
        counts["main::RUNTIME" if sym == "<main>" else sym] += 1
    return counts


def run(args, tmp):
    env = dict(os.environ, NYTPROF=f"addpid=1:stmts=0:slowops=0:clock=2:file={tmp}/nytprof.out")
    out = os.path.join(tmp, "ehprof.txt")
    err = subprocess.run([args.ehprof, "record", "-F", str(args.hz), "--srcline", "-o", out, "--", args.perl,
                          "-d:NYTProf", HOT, "fork", str(args.seconds)], env=env, capture_output=True, text=True,
                         check=True, timeout=args.seconds + 120).stderr
    times = collections.Counter()
    for f in os.listdir(tmp):
        if f.startswith("nytprof.out"):
            times.update(nytprof_times(os.path.join(tmp, f)))
            os.remove(os.path.join(tmp, f))
    return ehprof_counts(out), times, err


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--perl", default="/usr/bin/perl")
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--hz", type=int, default=499)
    ap.add_argument("--reps", type=int, default=2)
    result_file.add_argument(ap, "perl_vs_nytprof")
    args = ap.parse_args()
    counts, times = collections.Counter(), collections.Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.reps):
            c, t, _ = run(args, tmp)
            counts.update(c)
            times.update(t)
    n, total = sum(counts.values()), sum(times.values())
    top = [name for name, _ in times.most_common(10)]
    rows = {name: {"ehprof": round(100 * counts[name] / n, 2), "nytprof": round(100 * times[name] / total, 2)}
            for name in top}
    worst = max(abs(r["ehprof"] - r["nytprof"]) for r in rows.values())
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.2f}; "
          f"{args.reps} runs of {args.seconds} s, {n} ehprof samples with a Perl frame")
    print(f"{'sub':32} {'ehprof %':>9} {'NYTProf %':>9}")
    for name, r in rows.items():
        print(f"{name:32} {r['ehprof']:9.2f} {r['nytprof']:9.2f}")
    print(f"largest difference: {worst:.2f} points")
    figures = {"max_diff_points": round(worst, 2), "samples": n, "reps": args.reps, "seconds": args.seconds,
               "hz": args.hz}
    for name, r in rows.items():
        figures[f"{name} ehprof_pct"] = r["ehprof"]
        figures[f"{name} nytprof_pct"] = r["nytprof"]
    if not args.no_result:
        result_file.write("perl_vs_nytprof", figures, args.note, args.result)


if __name__ == "__main__":
    main()
