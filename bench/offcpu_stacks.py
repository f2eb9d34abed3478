#!/usr/bin/env python3
"""Off-CPU stacks on a stripped -O2 -fomit-frame-pointer program, side by side.

testdata's offcpu_sleep.stripped blocks 100 ms in sleep_a and 300 ms in
sleep_b in a loop (main -> sleep_loop -> sleep_a/sleep_b -> nanosleep).
Each profiler records it for the same stretch:
  ehprof       ehprof record --off-cpu (CFI walk), folded
  offcputime   libbpf-tools' offcputime -p PID (frame pointers)
and this prints, per profiler, the blocked time seen, the share of it whose
user stack reaches sleep_a or sleep_b and main (so the two callers can be
told apart), and the a:b split (1:3 is right). Function names come from the
unstripped twin's symbol table (nm), matched to the addresses or
FILE+0xSTART names the profilers print. Needs root.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import result_file
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def symbols(twin):
    out = subprocess.run(["nm", twin], capture_output=True, text=True, check=True).stdout
    return {int(m.group(1), 16): m.group(2)
            for m in re.finditer(r"^([0-9a-f]+) [Tt] (\w+)$", out, re.M)}


def name_frames(frames, syms, stripped):
    """Frames as function names where they are the program's own."""
    base = os.path.basename(stripped)
    named = []
    for f in frames:
        m = re.match(re.escape(base) + r"\+0x([0-9a-f]+)", f)
        named.append(syms.get(int(m.group(1), 16), f) if m else f)
    return named


def judge(stacks):
    """stacks: [(frames leaf first, ns)] -> (total, attributed, a, b)."""
    total = attributed = a = b = 0
    for frames, ns in stacks:
        total += ns
        if "main" not in frames:
            continue
        if "sleep_a" in frames:
            a += ns
        elif "sleep_b" in frames:
            b += ns
        else:
            continue
        attributed += ns
    return total, attributed, a, b


def run_ehprof(args, tmp, syms):
    out = os.path.join(tmp, "off.folded")
    subprocess.run([args.ehprof, "record", "--off-cpu", "-q", "-o", out, "--", args.program,
                    str(args.seconds)], check=True, capture_output=True)
    stacks = []
    for line in open(out):
        chain, _, value = line.rstrip("\n").rpartition(" ")
        frames = chain.split(";")[1:]  # root first after the comm
        stacks.append((name_frames(frames[::-1], syms, args.program), int(value)))
    return judge(stacks)


def run_offcputime(args, syms):
    p = subprocess.Popen([args.program, str(args.seconds)], stderr=subprocess.DEVNULL)
    time.sleep(0.3)  # the same warm-up as ehprof gets: its first block is not judged
    r = subprocess.run([args.offcputime, "-p", str(p.pid), str(int(args.seconds - 0.5))],
                       capture_output=True, text=True)
    p.wait()
    stacks, frames = [], []
    for line in r.stdout.splitlines():
        s = line.strip()
        if not s:
            continue
        if s.isdigit():  # the stack's microseconds end it
            stacks.append((name_frames(frames, syms, args.program), int(s) * 1000))
            frames = []
        elif not s.startswith("-"):  # "- comm (pid)" separates kernel+user from the count
            m = re.match(r"(?:0x)?([0-9a-f]+)$", s)
            frames.append(syms.get(int(m.group(1), 16), s) if m else s.split("+")[0])
    return judge(stacks)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--program", default=os.path.join(ROOT, "build", "testdata", "offcpu_sleep.stripped"))
    ap.add_argument("--offcputime", default=shutil.which("offcputime") or "/usr/sbin/offcputime")
    ap.add_argument("--seconds", type=float, default=4)
    result_file.add_argument(ap, "offcpu_stacks")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("offcpu_stacks: needs root")
    syms = symbols(args.program.replace(".stripped", ""))
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        rows["ehprof"] = run_ehprof(args, tmp, syms)
    if os.access(args.offcputime, os.X_OK):
        rows["offcputime"] = run_offcputime(args, syms)
    print(f"{os.path.basename(args.program)} {args.seconds:g} s ({os.uname().release})")
    figures = {}
    for name, (total, attributed, a, b) in rows.items():
        split = f"{a / 1e9:.3f} s : {b / 1e9:.3f} s" + (f" = 1 : {b / a:.3f}" if a else "")
        print(f"  {name:<11} blocked {total / 1e9:6.3f} s; with sleep_a/sleep_b and main on the "
              f"stack {100.0 * attributed / max(total, 1):5.1f}%; a : b = {split}")
        figures.update({f"{name}_blocked_s": round(total / 1e9, 3),
                        f"{name}_attributed_pct": round(100.0 * attributed / max(total, 1), 1),
                        f"{name}_b_over_a": round(b / a, 3) if a else 0})
    if not args.no_result:
        result_file.write("offcpu_stacks", figures, args.note, args.result)


if __name__ == "__main__":
    main()
