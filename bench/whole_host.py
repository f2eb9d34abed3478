#!/usr/bin/env python3
"""A whole busy host (issue 36): `ehprof record -a` at 999 Hz while Chromium
renders a page (a fresh headless browser each time: its processes start and
end), node and Python run, and a C++ build of this project runs (cmake, then
clang++ and bpftool through make -j2 in a fresh tree). Judged by stackcheck
(../shared/eval/stackcheck.py) over the whole run and per command, with
ehprof's own stop reasons, and --show-stops saying where each incomplete
stack stopped: the binaries (and, for "frame pointer implausible", the pcs)
that give each reason.

  python3 bench/whole_host.py                   # 10 s, table cache as it is
  python3 bench/whole_host.py --cold            # --no-table-cache
  python3 bench/whole_host.py --keep /tmp/wh    # keep the dump
  python3 bench/whole_host.py --judge /tmp/wh/whole_host.perf-script  # judge it again

Writes bench/results/whole_host.json (or whole_host_cold.json): complete_pct
(stackcheck, whole run, every sample), user_complete_pct (the samples with a
user stack: not kernel threads, tasks past exit_mm or in exec after its
address space was replaced; complete by stackcheck or ending in a program's
entry routine that has no CFI, glibc's ld.so's _start, which stackcheck
cannot judge), user_stackcheck_pct (stackcheck's alone over those),
user_samples, no_user_stack, ends_at_entry_point, ehprof_complete_pct and REASON_pct (its summary),
bpf_us_median, ring_bytes_per_sample (the samples' own records), the walks
finished late and their copies' cost (finished_late, deferred_*,
ring_bytes_per_sample_with_copies), per main command COMM_complete_pct and
COMM_samples (judged as user_complete_pct), and the top stopping binaries per reason (in the printout).
"""
import argparse
import collections
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import result_file
import stackcheck_json
import user_stacks

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
COMMS = ("chromium", "node", "python3", "clang++", "clang", "cc1plus", "make", "cmake", "bpftool", "ld",
         "ld.lld", "sh")
PAGE = """<!doctype html><html><body><canvas id=c width=800 height=600></canvas><script>
const c = document.getElementById('c').getContext('2d');
let t = 0;
function draw() {
  for (let i = 0; i < 4000; i++) {
    c.fillStyle = `hsl(${(i * 7 + t) % 360},70%,50%)`;
    c.fillRect((i * 37) % 800, (i * 91 + t) % 600, 9, 9);
  }
  t++;
  if (t < 200) requestAnimationFrame(draw);
}
draw();
</script><p>""" + "lorem ipsum " * 2000 + "</p></body></html>"



def stops_where(all_samples):
    """Per stop reason, a Counter of the outermost real frame's DSO and one
    of DSO+address."""
    by_dso = collections.defaultdict(collections.Counter)
    by_pc = collections.defaultdict(collections.Counter)
    for s in all_samples:
        if s.stop:
            where = s.user[-1] if s.user else ["?", "?", "(none)"]
            dso = os.path.basename(where[-1].strip("()"))
            by_dso[s.stop][dso] += 1
            by_pc[s.stop][f"{dso}+0x{where[0]}"] += 1
    return by_dso, by_pc


class Workloads:
    """The host's load: every process started here ends with stop()."""

    def __init__(self, work):
        self.work = work
        self.procs = []

    def start(self):
        page = os.path.join(self.work, "page.html")
        with open(page, "w") as f:
            f.write(PAGE)
        chromium = ("while :; do chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                    "--disable-background-networking --disable-component-update --disable-sync "
                    f"--disable-dev-shm-usage --user-data-dir={self.work}/profile --virtual-time-budget=3000 "
                    f"--screenshot={self.work}/shot.png file://{page} >/dev/null 2>&1; done")
        tree = os.path.join(self.work, "build")
        build = (f"CC=clang CXX=clang++ cmake -S {ROOT} -B {tree} -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null && "
                 f"make -j2 -C {tree} unwind_tables bpf_skeleton >/dev/null 2>&1")
        for cmd in (chromium, f"exec node {ROOT}/testdata/nodework.js 600",
                    f"exec python3 {ROOT}/testdata/python/shapes.py 600", build):
            self.procs.append(subprocess.Popen(["bash", "-c", cmd], start_new_session=True,
                                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))

    def stop(self):
        for p in self.procs:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()


def summary_figures(stderr):
    fig = {}
    m = re.search(r"user stacks complete \(reached the bottom\): ([\d.]+)%; stop reasons: (.*)", stderr)
    if m:
        fig["ehprof_complete_pct"] = float(m.group(1))
        for reason, pct in re.findall(r"([a-z][^,]*?) ([\d.]+)%", m.group(2)):
            fig[re.sub(r"[^a-z]+", "_", reason).strip("_") + "_pct"] = float(pct)
    m = re.search(r"BPF time per sample: median ([\d.]+) us", stderr)
    if m:
        fig["bpf_us_median"] = float(m.group(1))
    m = re.search(r"(\d+) bytes per sample through the ring buffer", stderr)
    if m:
        fig["ring_bytes_per_sample"] = int(m.group(1))
    m = re.search(r"walks finished late: (\d+) samples .*?: (\d+) stack copies sent, (\d+) bytes each on "
                  r"average; (\d+) not copied.*?; (\d+) over the cap.*?; (\d+) not finishable.*?with the copies "
                  r"(\d+) bytes a sample", stderr)
    if m:
        for key, value in zip(("finished_late", "deferred_copies", "deferred_bytes_per_copy", "deferred_budget_drops",
                               "deferred_over_cap", "deferred_unfinished", "ring_bytes_per_sample_with_copies"),
                              m.groups()):
            fig[key] = int(value)
    m = re.search(r"(\d+) samples in", stderr)
    if m:
        fig["ehprof_samples"] = int(m.group(1))
    return fig


def judge_dump(dump, stderr):
    """Prints the dump's figures (stackcheck's, per command, where stacks
    stopped; ehprof's summary from stderr) and returns them."""
    all_samples = list(user_stacks.samples(dump))
    by_dso, by_pc = stops_where(all_samples)
    fig = summary_figures(stderr)
    whole = user_stacks.judge(all_samples)
    fig["samples"] = whole["samples"]
    # stackcheck over every sample, those without a user stack too.
    fig["complete_pct"] = round(whole["stackcheck_pct"] * whole["user_samples"] / whole["samples"], 2) \
        if whole["samples"] else 0.0
    fig["user_samples"] = whole["user_samples"]
    fig["no_user_stack"] = sum(whole["no_user_stack"].values())
    fig["ends_at_entry_point"] = whole["ends_at_entry_point"]
    fig["user_complete_pct"] = whole["user_complete_pct"]
    fig["user_stackcheck_pct"] = whole["stackcheck_pct"]
    print(f"whole host: {fig['samples']} samples, ehprof says {fig.get('ehprof_complete_pct', 0):.1f}% complete; "
          f"stackcheck {fig['complete_pct']:.1f}% of all")
    print(f"with a user stack: {whole['user_samples']} samples, complete {whole['user_complete_pct']:.2f}% "
          f"(stackcheck {whole['stackcheck_pct']:.2f}%, and {whole['ends_at_entry_point']} ending in an entry "
          "routine without CFI); left out, no user stack: "
          + ", ".join(f"{k} {v}" for k, v in whole["no_user_stack"].items()))
    for comm in COMMS:
        c = user_stacks.judge(s for s in all_samples if s.comm == comm)
        if c["user_samples"]:
            key = re.sub(r"[^a-z0-9]", "_", comm)
            fig[f"{key}_samples"] = c["user_samples"]
            fig[f"{key}_complete_pct"] = c["user_complete_pct"]
            print(f"  {comm:10s} {c['user_samples']:6d} samples  complete {c['user_complete_pct']:5.1f}%")
    for reason, dsos in sorted(by_dso.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"stopped: {reason}: {sum(dsos.values())} samples; at " +
              ", ".join(f"{d} {n}" for d, n in dsos.most_common(6)))
        if "implausible" in reason:
            print("    pcs: " + ", ".join(f"{p} {n}" for p, n in by_pc[reason].most_common(8)))
    print("ehprof: " + " | ".join(l.split("ehprof: ", 1)[-1] for l in stderr.splitlines()
                                if "stop reasons" in l or "BPF time" in l or "finished late" in l))
    return fig


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--seconds", type=float, default=10)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--warmup", type=float, default=3, help="seconds of load before recording")
    ap.add_argument("--cold", action="store_true", help="--no-table-cache")
    ap.add_argument("--keep", help="directory for the dump")
    ap.add_argument("--judge", metavar="DUMP", help="judge a dump kept earlier (no recording, no result file)")
    result_file.add_argument(ap, "whole_host")
    args = ap.parse_args()
    stackcheck_json.require()
    if args.judge:
        judge_dump(args.judge, "")
        return 0
    work = tempfile.mkdtemp(prefix="ehprof-whole-host-")
    load = Workloads(work)
    try:
        load.start()
        time.sleep(args.warmup)
        dump = os.path.join(args.keep or work, "whole_host.perf-script")
        if args.keep:
            os.makedirs(args.keep, exist_ok=True)
        cmd = [args.ehprof, "record", "-a", "-F", str(args.hz), "-d", str(args.seconds), "--show-stops",
               "--format", "perf-script", "-o", dump] + (["--no-table-cache"] if args.cold else [])
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=args.seconds + 300)
        if r.returncode != 0:
            raise SystemExit(f"ehprof record failed ({r.returncode}): {r.stderr[-2000:]}")
    finally:
        load.stop()
    try:
        fig = judge_dump(dump, r.stderr)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    if not args.no_result:
        name = "whole_host_cold" if args.cold else "whole_host"
        result_file.write(name, fig, args.note, args.result.replace("whole_host.json", f"{name}.json"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
