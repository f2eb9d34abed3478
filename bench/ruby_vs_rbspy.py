#!/usr/bin/env python3
"""ehprof's Ruby frames against rbspy, sampling the same process at once.

Starts testdata/ruby/shapes.rb hot (ten hot functions in two threads,
recursion, blocks that the C methods sort_by, each and times yield to)
under Debian 12's ruby3.1, then runs at the same time
  ehprof record -p PID -F HZ --srcline -o perf-script
  rbspy record --pid PID -r HZ --on-cpu --nonblocking --format collapsed
(crates.io rbspy, pinned by scripts/install_rbspy.sh) and compares the share
of samples whose innermost frame of Ruby code is each function (rbspy's
ten hottest), over the samples that have one, counts pooled over the REPS
runs: rbspy names no C method of Debian's stripped libruby ("(unknown)
[c function]"), so C methods are left out on both sides. Under ruby3.1
both name a block "block in NAME" (Ruby 3.1's own labels; rbspy qualifies
no class before 3.3); with --ruby trixie:ruby3.3 (Debian 13's, in a root
scripts/debian_root.sh makes) both qualify by class ("Object#hot_add",
"block in Object#hot_sort"), and the names are compared as they are.
Also: of ehprof's samples of the Ruby threads in libruby, how many
carry a Ruby frame; and hot_add's loop lines as each profiler saw them.

--yjit runs Ruby with its JIT on: most samples then lie in YJIT's code
(anonymous memory, "[anon]"), which ehprof walks through by the control
frames (bpf/ruby_yjit.bpf.h); rbspy reads the same control frames. Under
YJIT a frame's pc is written only before calls that need it, so a leaf's
line is the one of its last call or its first, for rbspy as for ehprof.

Both count on-CPU samples (ehprof's cpu-clock; rbspy --on-cpu). Ruby's two
threads share the GVL: the one waiting for it sleeps and neither counts
it. A share p on n samples has a standard error of sqrt(p(1-p)/n). Needs
root.
"""
import argparse
import collections
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
from python_vs_pyspy import pooled, shares  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHAPES = os.path.join(ROOT, "testdata", "ruby", "shapes.rb")
FRAME = re.compile(r"\s*[0-9a-f]+ (.*) \((.*)\)$")
SRCLINE = re.compile(r"\s+(\S+):(\d+)$")
TRIXIE_33 = "trixie:ruby3.3"
# hot_add as each Ruby names it: bare before 3.3, by its class (Object's) from 3.3.
HOT_ADD = ("hot_add", "Object#hot_add")


def ehprof_samples(path):
    """Per sample: (frames leaf first as (symbol, dso, line))."""
    for block in open(path).read().split("\n\n"):
        lines = block.strip("\n").split("\n")
        if not lines or not lines[0].strip():
            continue
        frames = []
        for line in lines[1:]:
            m = FRAME.match(line)
            if m:
                frames.append([m.group(1), m.group(2), 0])
                continue
            m = SRCLINE.match(line)
            if m and frames:
                frames[-1][2] = int(m.group(2))
        yield frames


def is_ruby(frame):
    """A Ruby method or C method's frame; a stop marker "[ruby: ...]" is none."""
    symbol, dso = frame[0], frame[1]
    return dso.endswith(".rb") or (dso == "[ruby]" and not symbol.startswith("[ruby:"))


def ehprof_counts(path):
    leaves, lines = collections.Counter(), collections.Counter()
    in_libruby = with_ruby = 0
    for frames in ehprof_samples(path):
        ruby = [f for f in frames if is_ruby(f)]
        if any("libruby" in f[1] or f[1] == "[anon]" for f in frames):
            in_libruby += 1
            with_ruby += bool(ruby)
        code = [f for f in ruby if f[1].endswith(".rb")]
        if code:
            leaves[code[0][0]] += 1
            if code[0][0] in HOT_ADD:
                lines[code[0][2]] += 1
    return leaves, lines, in_libruby, with_ruby


def rbspy_counts(path):
    leaves, lines = collections.Counter(), collections.Counter()
    for line in open(path):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack:
            continue
        # The innermost frame of Ruby code: rbspy names no C method of a
        # stripped libruby ("(unknown) [c function]").
        code = [f for f in stack.split(";") if "[c function]" not in f]
        if not code:
            continue
        name, _, where = code[-1].rpartition(" - ")
        leaves[name] += int(count)
        if name in HOT_ADD:
            lines[int(where.rpartition(":")[2] or 0)] += int(count)
    return leaves, lines


def workload(ruby, root, seconds, yjit=False):
    flags = ["--yjit"] if yjit else []
    if ruby == TRIXIE_33:
        return ["chroot", root, "/usr/bin/ruby3.3"] + flags + ["/tmp/shapes.rb", "hot", str(seconds + 4)]
    return [ruby] + flags + [SHAPES, "hot", str(seconds + 4)]


def run_once(ehprof, rbspy, ruby, root, seconds, hz, tmp, yjit=False):
    work = subprocess.Popen(workload(ruby, root, seconds, yjit))
    try:
        time.sleep(1.0)
        eh_out, rb_out = os.path.join(tmp, "ehprof.txt"), os.path.join(tmp, "rbspy.txt")
        eh = subprocess.Popen([ehprof, "record", "-p", str(work.pid), "-F", str(hz), "--srcline",
                               "-d", str(seconds + 0.5), "-o", eh_out],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        # In the root rbspy runs there too: it opens the files the maps name.
        # rbspy 0.55.0 knows 3.3 up to 3.3.13; trixie's later patch
        # releases keep 3.3's layout.
        inside = ["chroot", root, "/tmp/rbspy"] if root else [rbspy]
        force = ["--force-version", "3.3.13"] if root else []
        rb_file = "/tmp/rbspy.txt" if root else rb_out
        rb = subprocess.run(inside + ["record", "--pid", str(work.pid), "-r", str(hz), "-d", str(int(seconds)),
                                      "--on-cpu", "--nonblocking", "--silent", "--format", "collapsed",
                                      "-f", rb_file] + force, capture_output=True, text=True)
        if root:
            shutil.move(os.path.join(root, "tmp", "rbspy.txt"), rb_out)
        eh_err = eh.communicate()[1]
        if eh.returncode != 0 or rb.returncode != 0:
            sys.exit(f"a profiler failed:\n{eh_err}\n{rb.stderr}")
    finally:
        work.kill()
        work.wait()
    ours, our_lines, in_libruby, with_ruby = ehprof_counts(eh_out)
    theirs, their_lines = rbspy_counts(rb_out)
    return {"ours": ours, "theirs": theirs, "our_lines": our_lines, "their_lines": their_lines,
            "in_libruby": in_libruby, "with_ruby": with_ruby}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--ruby", default="/usr/bin/ruby3.1", help=f"a ruby, or {TRIXIE_33}")
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--hz", type=int, default=499)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--yjit", action="store_true", help="run Ruby with YJIT on (ruby --yjit)")
    result_file.add_argument(ap, "ruby_vs_rbspy")
    args = ap.parse_args()
    rbspy = subprocess.run(["bash", os.path.join(ROOT, "scripts", "install_rbspy.sh")],
                           capture_output=True, text=True, check=True).stdout.strip()
    print(f"# {platform.node()} {platform.release()} {os.cpu_count()} CPUs, "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.ruby}, {args.seconds:g} s at "
          f"{args.hz} Hz, {args.reps} runs pooled{', --yjit' if args.yjit else ''}")
    with tempfile.TemporaryDirectory() as tmp:
        root = make_debian_root("trixie", "ruby3.3", "ehprof-rb33-root.", tmp) if args.ruby == TRIXIE_33 else None
        try:
            if root:
                shutil.copy(SHAPES, os.path.join(root, "tmp", "shapes.rb"))
                shutil.copy(rbspy, os.path.join(root, "tmp", "rbspy"))
            runs = [run_once(args.ehprof, rbspy, args.ruby, root, args.seconds, args.hz, tmp, args.yjit)
                    for _ in range(args.reps)]
        finally:
            if root:
                close_root(root)
    ours, theirs = pooled(runs, "ours"), pooled(runs, "theirs")
    ours_s, theirs_s = shares(ours), shares(theirs)
    top = [k for k, _ in theirs.most_common(10)]
    max_diff = max(abs(ours_s.get(k, 0.0) - theirs_s.get(k, 0.0)) for k in top)
    in_libruby = sum(r["in_libruby"] for r in runs)
    with_ruby = 100.0 * sum(r["with_ruby"] for r in runs) / max(in_libruby, 1)
    for k in top:
        print(f"    {k:28} ehprof {ours_s.get(k, 0):5.1f}%  rbspy {theirs_s[k]:5.1f}%")
    our_lines, their_lines = pooled(runs, "our_lines"), pooled(runs, "their_lines")
    print(f"{HOT_ADD[args.ruby == TRIXIE_33]} lines: ehprof {dict(sorted(shares(our_lines).items()))}")
    print(f"               rbspy  {dict(sorted(shares(their_lines).items()))}")
    print(f"max |share difference| over rbspy's top 10: {max_diff:.2f} points; "
          f"samples in libruby with Ruby frames {with_ruby:.2f}% of {in_libruby}; "
          f"ehprof {sum(ours.values())} rbspy {sum(theirs.values())} samples with a Ruby frame")
    figures = {"max_diff_points": round(max_diff, 2), "with_ruby_pct": round(with_ruby, 2),
               "names_equal": sum(1 for k in top if k in ours),
               "ehprof_samples": sum(ours.values()), "rbspy_samples": sum(theirs.values())}
    line_set = set(our_lines) | set(their_lines)
    figures["hot_add_line_max_diff_points"] = round(max(
        (abs(shares(our_lines).get(x, 0) - shares(their_lines).get(x, 0)) for x in line_set), default=0), 2)
    if not args.no_result:
        name = "ruby_vs_rbspy_yjit" if args.yjit else "ruby_vs_rbspy"
        path = args.result
        if args.yjit and path == os.path.join(result_file.RESULTS, "ruby_vs_rbspy.json"):
            path = os.path.join(result_file.RESULTS, name + ".json")
        result_file.write(name, figures, args.note, path, extra={"ruby": args.ruby})


if __name__ == "__main__":
    main()
