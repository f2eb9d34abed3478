#!/usr/bin/env python3
"""Stacks at a uprobe on Debian's fio, ehprof beside bpftrace, in one run.

The seed case of issue 12: every call of fio's get_io_u (the fio-null job
of ../shared/eval), probed by
  ehprof     ehprof record -e uprobe:/usr/bin/fio:get_io_u (CFI walk)
  bpftrace   bpftrace -e 'uprobe:/usr/bin/fio:get_io_u { @[ustack(perf)] = count(); }'
             (frame pointers; Debian's fio has none)
and prints, per tool, the hits counted and the share whose user stack
reaches fio's main (main -> fio_backend -> ... -> get_io_u), and the ratio.
The job is time-based (4 s): the hit counts differ by what each tool's
handler costs fio per call, not by calls missed. ehprof's BPF time per hit
(median/p90 from its program's own clock, as its summary prints it) is
reported too. Needs root. Writes bench/results/uprobe_stacks.json.
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import result_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SHARED = os.environ.get("EHPROF_SHARED", os.path.join(ROOT, "..", "shared"))  # ../shared/eval


def ehprof(args, tmp):
    out = os.path.join(tmp, "hits.folded")
    r = subprocess.run([args.ehprof, "record", "-q", "-e", f"uprobe:{args.binary}:{args.symbol}", "-o", out,
                        "--"] + args.workload, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("ehprof failed: " + r.stderr[-800:])
    hits = to_main = 0
    for line in open(out):
        chain, _, n = line.rstrip("\n").rpartition(" ")
        hits += int(n)
        if "main" in chain.split(";"):
            to_main += int(n)
    lost = re.search(r"\((\d+) lost\)", r.stderr)
    bpf = re.search(r"median ([\d.]+) us, p90 ([\d.]+) us", r.stderr)
    if not bpf:
        raise RuntimeError("ehprof's summary has no BPF time: " + r.stderr[-800:])
    args.bpf_us = (float(bpf.group(1)), float(bpf.group(2)))
    return hits, to_main, int(lost.group(1)) if lost else -1


def bpftrace(args):
    prog = f"uprobe:{args.binary}:{args.symbol} {{ @[ustack(perf)] = count(); }}"
    # bpftrace -c wants a path (a bare "fio" matched two binaries on PATH).
    cmd = [shutil.which(args.workload[0]) or args.workload[0]] + args.workload[1:]
    r = subprocess.run([args.bpftrace, "-e", prog, "-c", " ".join(cmd)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError("bpftrace failed: " + r.stderr[-800:])
    hits = to_main = 0
    # @[\n\tADDR SYM+OFF (PATH)\n...\n]: COUNT
    for m in re.finditer(r"@\[\n(.*?)\]: (\d+)", r.stdout, re.S):
        n = int(m.group(2))
        names = [f.split()[1].split("+")[0] for f in m.group(1).strip().splitlines() if len(f.split()) > 1]
        hits += n
        if "main" in names:
            to_main += n
    return hits, to_main, -1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--bpftrace", default=shutil.which("bpftrace") or "/usr/bin/bpftrace")
    ap.add_argument("--binary", default="/usr/bin/fio")
    ap.add_argument("--symbol", default="get_io_u")
    ap.add_argument("workload", nargs="*", default=["fio", os.path.join(SHARED, "eval", "fio-null.job")])
    result_file.add_argument(ap, "uprobe_stacks")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("uprobe_stacks: needs root")
    rows = {}
    with tempfile.TemporaryDirectory() as tmp:
        rows["ehprof"] = ehprof(args, tmp)
    if os.access(args.bpftrace, os.X_OK):
        rows["bpftrace"] = bpftrace(args)
    else:
        print(f"uprobe_stacks: no {args.bpftrace} (apt install bpftrace): left out")
    print(f"uprobe:{args.binary}:{args.symbol} during {' '.join(args.workload)} ({os.uname().release})")
    share = {}
    for name, (hits, to_main, lost) in rows.items():
        share[name] = to_main / hits if hits else 0.0
        extra = f", {lost} lost" if lost >= 0 else ""
        print(f"  {name:<9} {hits:>9} hits{extra}; stack reaches main: {100.0 * share[name]:6.2f}%")
    print(f"  ehprof's BPF time per hit: median {args.bpf_us[0]} us, p90 {args.bpf_us[1]} us")
    figures = {"ehprof_bpf_median_us": args.bpf_us[0], "ehprof_bpf_p90_us": args.bpf_us[1]}
    for name, (hits, to_main, lost) in rows.items():
        figures.update({f"{name}_hits": hits, f"{name}_to_main_pct": round(100.0 * share[name], 2)})
        if lost >= 0:
            figures[f"{name}_lost"] = lost
    if "bpftrace" in share:
        ratio = share["ehprof"] / share["bpftrace"] if share["bpftrace"] else float("inf")
        print(f"  complete-stack share, ehprof / bpftrace: {ratio:.1f}" if share["bpftrace"]
              else "  complete-stack share, ehprof / bpftrace: bpftrace has none")
    if not args.no_result:
        result_file.write("uprobe_stacks", figures, args.note, args.result)


if __name__ == "__main__":
    main()
