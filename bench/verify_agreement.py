#!/usr/bin/env python3
"""The in-kernel walk against libdwfl on the same samples (`--verify`).

Runs `ehprof record -F 999 --verify=N` on each workload: every Nth sample the BPF
program also copies the registers and 64 KiB of stack, libdwfl unwinds that
copy afterwards, and ehprof's report says how many frames agree. Workloads:
Debian's fio (the fio-null job of ../shared/eval), Debian's python3.11 (a
pure-Python loop) and testdata's stripped plt_calls (calls through the PLT).
Then the frame-pointer walk beside the CFI walk on fio (`--unwinder both
--compare`): the share of samples where FP agrees, the mean user depths and
the FP frames above the leaf that are not call sites. Needs root. Writes
bench/results/verify_agreement.json: per workload (fio, python3_11,
plt_calls) frames_pct, frames, samples_pct, samples; fp_agree_pct,
fp_depth, cfi_depth, fp_not_call_sites_pct.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

import result_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("EHPROF_SHARED", os.path.join(ROOT, "..", "shared"))
FRAMES = re.compile(r"frames agreeing with libdwfl: (\d+) of (\d+) \(([\d.]+)%\)")
SAMPLES = re.compile(r"samples agreeing on every frame: (\d+) \(([\d.]+)%\)")
PY_LOOP = "import time\nt=time.time()\ndef f(n): return sum(i*i for i in range(n))\n" \
          "while time.time()-t<{s}: f(1000)\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--testdata", default=os.path.join(ROOT, "build", "testdata"))
    ap.add_argument("--every", type=int, default=10, help="--verify=N")
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("-F", type=int, default=999, help="sampling rate")
    result_file.add_argument(ap, "verify_agreement")
    a = ap.parse_args()
    workloads = {
        "fio": ["fio", os.path.join(SHARED, "eval", "fio-null.job")],
        "python3_11": ["python3.11", "-c", PY_LOOP.format(s=a.seconds)],
        "plt_calls": [os.path.join(a.testdata, "plt_calls.stripped"), str(a.seconds)],
    }
    figures = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, cmd in workloads.items():
            r = subprocess.run([a.ehprof, "record", "-q", "-F", str(a.F), f"--verify={a.every}", "-o",
                                os.path.join(tmp, "out.folded"), "--"] + cmd,
                               capture_output=True, text=True)
            f, s = FRAMES.search(r.stderr), SAMPLES.search(r.stderr)
            if r.returncode != 0 or not f or not s:
                sys.exit(f"verify_agreement: {' '.join(cmd)}: rc {r.returncode}: {r.stderr[-1500:]}")
            print(f"{name:11} frames {f.group(1)} of {f.group(2)} ({f.group(3)}%), samples agreeing "
                  f"on every frame {s.group(1)} ({s.group(2)}%)")
            figures.update({f"{name}_frames_pct": float(f.group(3)), f"{name}_frames": int(f.group(2)),
                            f"{name}_samples_pct": float(s.group(2)), f"{name}_samples": int(s.group(1))})
        report = os.path.join(tmp, "compare.txt")
        r = subprocess.run([a.ehprof, "record", "-q", "-F", str(a.F), "--unwinder", "both", "--compare", report, "-o",
                            os.path.join(tmp, "out.folded"), "--"] + workloads["fio"],
                           capture_output=True, text=True)
        text = open(report).read() if r.returncode == 0 and os.path.exists(report) else ""
        agree = re.search(r"FP agrees with CFI: +\d+ +([\d.]+)%", text)
        depth = re.search(r"mean user depth: CFI ([\d.]+), FP ([\d.]+)", text)
        calls = re.search(r"not call sites: \d+ of \d+ \(([\d.]+)%\)", text)
        if not (agree and depth and calls):
            sys.exit(f"verify_agreement: --unwinder both --compare: rc {r.returncode}: {r.stderr[-800:]}{text}")
        print(text.split("\n\n")[0])
        figures.update({"fp_agree_pct": float(agree.group(1)), "cfi_depth": float(depth.group(1)),
                        "fp_depth": float(depth.group(2)), "fp_not_call_sites_pct": float(calls.group(1))})
    if not a.no_result:
        result_file.write("verify_agreement", figures, a.note, a.result)


if __name__ == "__main__":
    main()
