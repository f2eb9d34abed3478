#!/usr/bin/env python3
"""Process churn under `ehprof record -a` (issue 5, item 2).

While ehprof records the whole machine, testdata's churn_load starts RATE
short-lived processes a second for LOAD seconds (a third exec
churn_child.stripped, a third dlopen libdlwork.so, a third spin in their
own copy). Measured from outside ehprof:

  - BPF map entries (bpftool): the hash maps' entry counts and the tables
    array's non-empty descriptors, before the load, at its end, and after
    SETTLE seconds without it (unused tables are kept 10 s for reuse);
  - ehprof's RSS (/proc/PID/status) every second;
  - stacks of the short-lived processes in the perf-script output: the
    share of their samples in the busy functions whose walk reached _start
    through main (known in the kernel at fork, exec, mmap), and
    stackcheck.py's figures when ../shared/eval/stackcheck.py is there
    (every sample of the exec'd child, ld.so's start-up included, whose
    _start has no CFI).

  python3 bench/churn.py                       # 1,000/s for 60 s
  python3 bench/churn.py --ehprof-arg=--no-kernel-maps   # /proc only
  python3 bench/churn.py --rate 300 --load 10 --check   # the ctest

--check turns the figures into assertions (exit 1 on failure); without
root it fails (CI must not skip it) unless CI is unset, where it prints
SKIPPED and exits 0.
"""
import argparse
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time

import result_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
BUSY = ("child_inner", "dlwork_inner", "load_child_spin")
EXEC_CHILD = "churn_child.stripped"  # its frames' name in perf script (no symbols)
HASH_MAPS = ("procs", "targets", "notified")


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def bpftool_json(*args, tries=5):
    """bpftool's JSON. A dump of a hash map that the recorder changes while
    bpftool walks it can fail (an entry deleted between getting its key and
    looking it up: "can't lookup element"); it is tried again, and after the
    last try its error is raised naming the command."""
    for attempt in range(tries):
        out = subprocess.run(["bpftool", "-j", *args], capture_output=True, text=True)
        if out.returncode == 0:
            try:
                return json.loads(out.stdout or "null")
            except ValueError:
                pass
        time.sleep(0.05 * (attempt + 1))
    raise RuntimeError(f"bpftool {' '.join(args)} failed {tries} times: "
                       f"{(out.stderr or out.stdout).strip()[-300:]}")


def process_count():
    return sum(1 for d in os.listdir("/proc") if d.isdigit())


def mapped_file_count():
    """Distinct files mapped executable by the machine's live processes: what
    a system-wide recording may rightly hold tables for."""
    files = set()
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/maps") as f:
                for line in f:
                    parts = line.split(None, 5)
                    if len(parts) == 6 and "x" in parts[1] and parts[5].startswith("/"):
                        files.add((parts[3], parts[4]))
        except OSError:  # ended meanwhile, or a kernel thread
            pass
    return len(files)


def map_ids(pid):
    """The ids of the BPF maps process pid holds fds on (its fdinfo says)."""
    ids = set()
    fd_dir = f"/proc/{pid}/fd"
    for fd in os.listdir(fd_dir):
        try:
            if os.readlink(os.path.join(fd_dir, fd)) != "anon_inode:bpf-map":
                continue
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("map_id:"):
                        ids.add(int(line.split()[1]))
        except OSError:
            pass
    return ids


def map_counts(pid):
    """Entries in ehprof's maps, counted by bpftool."""
    counts = {}
    ids = map_ids(pid)
    for m in bpftool_json("map", "show"):
        if m.get("id") not in ids:
            continue
        name = m.get("name", "")
        if name in HASH_MAPS:
            counts[name] = len(bpftool_json("map", "dump", "id", str(m["id"])) or [])
        elif name == "tables":
            dump = bpftool_json("map", "dump", "id", str(m["id"])) or []
            counts[name] = sum(1 for e in dump if any(int(b, 16) for b in e.get("value", [])))
    return counts


def parse_samples(path):
    """(comm, [frame symbols leaf first]) per sample of a perf-script dump."""
    samples, block = [], []
    frame = re.compile(r"^\s*[0-9a-fA-F]+\s+(\S+)")
    with open(path, errors="replace") as f:
        for line in list(f) + [""]:
            if line.strip():
                block.append(line.rstrip("\n"))
                continue
            if block and not block[0].startswith(("\t", " ")):
                syms = []
                for fl in block[1:]:
                    mm = frame.match(fl)
                    if mm:
                        syms.append(re.sub(r"\+0x[0-9a-f]+$", "", mm.group(1)))
                samples.append((block[0].split()[0], syms))
            block = []
    return samples


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--testdata", default=os.path.join(ROOT, "build", "testdata"))
    ap.add_argument("--rate", type=float, default=1000)
    ap.add_argument("--load", type=float, default=60, help="seconds of load")
    ap.add_argument("--busy-us", default="500", help="each child's busy time")
    ap.add_argument("--warmup", type=float, default=3)
    ap.add_argument("--settle", type=float, default=15, help="seconds after the load")
    ap.add_argument("--freq", default="199")
    ap.add_argument("--check", action="store_true")
    result_file.add_argument(ap, "churn")
    ap.add_argument("--keep", help="directory for the profile and ehprof's stderr")
    ap.add_argument("--ehprof-arg", action="append", default=[],
                    help="one more argument for ehprof record (repeat; e.g. --no-kernel-maps)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        print("SKIPPED: recording needs root (CAP_BPF, CAP_PERFMON)")
        return 1 if os.environ.get("CI") == "true" else 0

    work = args.keep or tempfile.mkdtemp(prefix="ehprof-churn-")
    os.makedirs(work, exist_ok=True)
    out = os.path.join(work, "churn.perf-script")
    err_path = os.path.join(work, "ehprof.stderr")
    total = args.warmup + args.load + args.settle + 30
    with open(err_path, "w") as err:
        rec = subprocess.Popen([args.ehprof, "record", "-a", "-q", "-F", args.freq, "-d", str(total),
                                "--format", "perf-script", "-o", out, *args.ehprof_arg], stderr=err)
    rss = []
    try:
        time.sleep(args.warmup)
        base = map_counts(rec.pid)
        procs_before = process_count()
        files_before = mapped_file_count()
        rss.append((0.0, rss_kb(rec.pid)))
        load = subprocess.Popen([os.path.join(args.testdata, "churn_load"), str(args.rate), str(args.load),
                                 os.path.join(args.testdata, "churn_child.stripped"),
                                 os.path.join(args.testdata, "libdlwork.so"), args.busy_us],
                                stdout=subprocess.PIPE, text=True)
        t0 = time.time()
        during = {}
        while load.poll() is None:
            time.sleep(1)
            rss.append((time.time() - t0, rss_kb(rec.pid)))
            if not during and time.time() - t0 > args.load / 2:
                during = map_counts(rec.pid)
        load_out = load.stdout.read().strip()
        at_end = map_counts(rec.pid)
        t_end = time.time()
        while time.time() - t_end < args.settle:
            time.sleep(1)
            rss.append((time.time() - t0, rss_kb(rec.pid)))
        after = map_counts(rec.pid)
        procs_after = process_count()
        files_after = mapped_file_count()
        alive = rec.poll() is None
    finally:
        if rec.poll() is None:
            rec.send_signal(signal.SIGINT)
        rec_exit = rec.wait(timeout=120)
    stderr = open(err_path).read()

    samples = parse_samples(out) if os.path.exists(out) else []
    short = [s for c, s in samples if s and any(b in s for b in BUSY) and c.startswith(("churn_child", "churn_load"))]
    complete = [s for s in short if s[-1] == "_start" and "main" in s]
    by_kind = {}
    for s in short:
        kind = next(b for b in BUSY if b in s)
        ok = s[-1] == "_start" and "main" in s
        n, c = by_kind.get(kind, (0, 0))
        by_kind[kind] = (n + 1, c + ok)
    # The exec'd child is stripped: its frames are named by file. Its own
    # code's samples are whole when the walk ends at its _start (in its file)
    # through libc's __libc_start_call_main.
    own = [s for c, s in samples if c.startswith("churn_child") and s and s[0] == EXEC_CHILD]
    own_ok = sum(1 for s in own if s[-1] == EXEC_CHILD and "__libc_start_call_main" in s)
    by_kind["exec'd child's code"] = (len(own), own_ok)
    rss_vals = [r for _, r in rss if r]
    load_rss = [r for t, r in rss if r and 5 <= t <= args.load]

    print(f"load: {load_out} (asked {args.rate:.0f}/s for {args.load:.0f} s); "
          f"processes on the machine {procs_before} before, {procs_after} after")
    print(f"ehprof alive through the load: {alive}; exit {rec_exit}; {len(samples)} samples")
    print("BPF map entries (bpftool):  before  mid-load  load-end  +%.0fs" % args.settle)
    for name in sorted(set(base) | set(after)):
        print(f"  {name:10s} {base.get(name, '-'):>12} {during.get(name, '-'):>9} "
              f"{at_end.get(name, '-'):>9} {after.get(name, '-'):>6}")
    if rss_vals:
        print(f"ehprof RSS: before load {rss_vals[0] / 1024:.1f} MB, during load "
              f"{min(load_rss or rss_vals) / 1024:.1f}-{max(load_rss or rss_vals) / 1024:.1f} MB, "
              f"peak {max(rss_vals) / 1024:.1f} MB, after {rss_vals[-1] / 1024:.1f} MB")
    pct = lambda a, b: 100.0 * a / b if b else 0.0
    print(f"short-lived processes' samples in their busy functions: {len(short)}, complete "
          f"(main .. _start) {pct(len(complete), len(short)):.1f}%")
    for kind, (n, c) in sorted(by_kind.items()):
        print(f"  {kind:16s} {n:6d} samples, {pct(c, n):5.1f}% complete")
    for line in stderr.splitlines():
        if any(k in line for k in ("unwind tables:", "warning", "complete", "remembered")):
            print("  ehprof: " + line.split("ehprof: ", 1)[-1])
    stackcheck = os.path.join(ROOT, "..", "shared", "eval", "stackcheck.py")
    judged = {}
    if os.path.exists(stackcheck) and os.path.exists(out):
        for comm in ("churn_child.str",):
            r = subprocess.run([sys.executable, stackcheck, "--comm", comm, out], capture_output=True, text=True)
            print(f"stackcheck --comm {comm}: " + " ".join(r.stdout.split()[:40]))
            m = re.search(r"complete_pct ([\d.]+)", r.stdout)
            if m:
                judged["exec_child_stackcheck_complete_pct"] = float(m.group(1))
    print(f"profile and stderr in {work}")
    if not args.no_result:
        figs = {"samples": len(samples), "short_complete_pct": round(pct(len(complete), len(short)), 1)}
        for kind, (n, c) in by_kind.items():
            key = "".join(ch if ch.isalnum() else "_" for ch in kind).strip("_")
            figs.update({f"{key}_samples": n, f"{key}_complete_pct": round(pct(c, n), 1)})
        for name in set(base) & set(after):
            figs.update({f"map_{name}_before": base[name], f"map_{name}_after": after[name]})
            if name in during:
                figs[f"map_{name}_mid_load"] = during[name]
        started = re.search(r"started (\d+) failed (\d+)", load_out)
        if started:
            figs.update(processes_started=int(started.group(1)), processes_failed=int(started.group(2)))
        figs.update(judged)
        if rss_vals:
            figs.update(rss_before_mb=round(rss_vals[0] / 1024, 1), rss_peak_mb=round(max(rss_vals) / 1024, 1))
        result_file.write("churn", figs, args.note, args.result)

    if not args.check:
        return 0
    failures = []
    if not alive:
        failures.append("ehprof ended before the load did")
    if rec_exit != 0:
        failures.append(f"ehprof exit {rec_exit}")
    if "failed 0" not in load_out:
        failures.append(f"load generator: {load_out}")
    # Other processes on the machine start and end too: entries may follow
    # the growth in live processes (tables: in the files they map, which a
    # build running beside the test changes without changing the process
    # count), plus a little slack.
    slack = 3 + max(0, procs_after - procs_before)
    for name in HASH_MAPS + ("tables",):
        grown = slack + (max(0, files_after - files_before) if name == "tables" else 0)
        if name in base and after.get(name, 1 << 30) > base[name] + grown:
            failures.append(f"map {name}: {base[name]} entries before, {after.get(name)} after "
                            f"(processes on the machine: {procs_before} before, {procs_after} after; "
                            f"files they map executable: {files_before} before, {files_after} after)")
    if load_rss and max(load_rss) - min(load_rss) > 64 * 1024:
        failures.append(f"RSS grew {(max(load_rss) - min(load_rss)) / 1024:.0f} MB during the load")
    # Forked children get their parent's entry in the kernel; exec'd ones
    # and dlopen'd libraries are mapped there at exec and mmap once their
    # tables are loaded: their stacks must be whole (the first runs, before
    # the tables load, and --no-kernel-maps are reported, not judged).
    kernel_maps = "--no-kernel-maps" not in args.ehprof_arg
    for kind in ("load_child_spin", "exec'd child's code", "dlwork_inner"):
        n, c = by_kind.get(kind, (0, 0))
        if n < 10 or (kernel_maps and pct(c, n) < 80):
            failures.append(f"{kind}: {c} of {n} samples complete")
    if os.geteuid() != 0:
        failures.append("needs root (CAP_BPF, CAP_PERFMON) to record")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
