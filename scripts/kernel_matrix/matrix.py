#!/usr/bin/env python3
"""The kernel matrix: ehprof's BPF programs loaded, and fio profiled, on the
kernels our users run (Debian's own packages, booted under qemu), beside
this machine's kernel.

For each kernel: `ehprof check` (features, the user walk it runs, verifier
instruction counts), `ehprof check --bpf-object` for the same BPF source
built against every other kernel's BTF (both builds: bpf_loop and tail
calls), `ehprof record` of a 4 s fio run judged per thread by stackcheck on
the host, `ehprof agent` writing intervals, and `ehprof record --off-cpu`
of testdata's offcpu_sleep judged by its 1:3 split. Guests run one per
host CPU at once (--jobs). Writes matrix.json and matrix.md into --out.
"""
import argparse
import concurrent.futures
import os
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import guest_vm  # noqa: E402
import judge  # noqa: E402
import kernels  # noqa: E402

REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "bench"))
import result_file  # noqa: E402  (bench/result_file.py: the figures docs/ quotes)
# name -> (kernel line, None for the newest; suites its linux-image-amd64
# comes from; who runs it; expectation). Kernels without bpf_loop (5.10)
# run the tail-call build.
KERNELS = {
    "6.1": ("6.1", ["bookworm", "bookworm-security"], "Debian 12 stock", "runs"),
    "6.12": ("6.12", ["bookworm-backports"], "Debian 12 backports", "runs"),
    "5.10": ("5.10", ["bullseye", "bullseye-security"], "Debian 11 stock", "runs"),
    "newest": (None, ["trixie-backports"], "Debian 13 backports, the newest Debian ships", "runs"),
}
REFUSAL = "bpf_loop (Linux 5.17+"
# The off-CPU split offcpu_sleep makes (300 ms : 100 ms), and how close.
OFFCPU_RATIO, OFFCPU_TOLERANCE = 3.0, 0.15
TAIL_SUFFIX = "-tailcalls"


def build_object(btf, name, out_dir, build_dir):
    """profiler.bpf.c compiled against this BTF with the build's own flags,
    both builds: NAME.bpf.o (bpf_loop) and NAME-tailcalls.bpf.o."""
    hdir = os.path.join(out_dir, f"include-{name}")
    os.makedirs(hdir, exist_ok=True)
    with open(os.path.join(hdir, "vmlinux.h"), "w") as f:
        subprocess.run(["bpftool", "btf", "dump", "file", btf, "format", "c"], stdout=f, check=True)
    with open(os.path.join(build_dir, "bpf", "bpf_cflags.txt")) as f:
        cflags = f.read().split()
    for suffix, extra in (("", []), (TAIL_SUFFIX, ["-DEHP_COMPAT"])):
        obj = os.path.join(out_dir, "objects", f"{name}{suffix}.bpf.o")
        os.makedirs(os.path.dirname(obj), exist_ok=True)
        r = subprocess.run(["clang", *cflags, *extra, "-I", hdir, "-I", REPO, "-c",
                            os.path.join(REPO, "bpf", "profiler.bpf.c"), "-o", obj],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return None, r.stderr.strip()[-600:]
    return obj, ""


def boot_guest(vmlinuz, initramfs, res, env, timeout_s):
    """One guest run, booted once more when it never got to our init
    (guest_vm.boot_with_retry)."""
    return guest_vm.boot_with_retry(
        lambda: guest_vm.boot(vmlinuz, initramfs, res, env, timeout_s), res)


def run_host(out, env):
    res = os.path.join(out, "host")
    shutil.rmtree(res, ignore_errors=True)
    os.makedirs(res)
    start = time.monotonic()
    with open(os.path.join(res, "guest.log"), "w") as log:
        subprocess.run(["bash", os.path.join(HERE, "guest.sh")], stdout=log, stderr=subprocess.STDOUT,
                       env={**os.environ, **env, "EHPROF_RESULTS": res})
    return res, time.monotonic() - start


def summarize(name, who, expect, res, seconds, boot_rc=None, timed_out=False):
    g = judge.load_json(os.path.join(res, "guest.json")) or {}
    check_text = judge.read(os.path.join(res, "check.txt"))
    row = {"kernel": name, "who": who, "expect": expect, "uname": g.get("uname"),
           "seconds": round(seconds, 1), "boot_rc": boot_rc, "timed_out": timed_out,
           "check_rc": g.get("check_rc"), "check": judge.parse_check(check_text),
           "objects": g.get("objects", {}), "record_rc": g.get("record_rc"),
           "record_ms": g.get("record_ms"), "agent_rc": g.get("agent_rc"),
           "agent_files": g.get("agent_files"), "offcpu_rc": g.get("offcpu_rc")}
    off = os.path.join(res, "offcpu.folded")
    if g.get("offcpu_rc") == 0 and os.path.exists(off):
        row["offcpu"] = judge.judge_offcpu(off)
    dump = os.path.join(res, "fio.perf-script")
    if g.get("record_rc") == 0 and os.path.exists(dump):
        row["record"] = judge.judge_record(dump, res)
        row["record_summary"] = judge.first_line(
            judge.read(os.path.join(res, "record.txt")), "user stacks complete")
    return row


def problems(row, min_complete):
    """What fails the row's expectation, as sentences."""
    out = []
    if row["timed_out"]:
        where = ("never reached its init (twice)" if row.get("hung") == "boot"
                 else "ran init but did not finish in time")
        return [f"{row['kernel']}: the guest {where}; console: {row.get('console_tail')}; "
                f"guest.log: {row.get('guest_log_tail')}"]
    if row["expect"] == "refused":
        text = row["check"].get("error") or ""
        if row["check_rc"] != 1 or REFUSAL not in text:
            out.append(f"{row['kernel']}: expected a refusal naming {REFUSAL}..., got rc "
                       f"{row['check_rc']}: {text!r}")
        return out
    if row["check_rc"] != 0:
        out.append(f"{row['kernel']}: ehprof check failed: {row['check'].get('error')}")
    tail_walk = row["check"].get("walk") == "tail calls"
    for obj, rc in sorted(row["objects"].items()):
        # A kernel that runs the tail-call build loads only that build;
        # every other kernel loads both.
        if rc != 0 and (obj.endswith(TAIL_SUFFIX) or not tail_walk):
            out.append(f"{row['kernel']}: the object {obj} (built against that BTF) did not load")
    if row["record_rc"] != 0:
        out.append(f"{row['kernel']}: ehprof record exited {row['record_rc']}")
        return out
    if row.get("agent_rc") != 0 or (row.get("agent_files") or 0) < 2:
        out.append(f"{row['kernel']}: ehprof agent exited {row.get('agent_rc')} with "
                   f"{row.get('agent_files')} interval files (want 0 and >= 2)")
    job = row.get("record", {}).get("job", {})
    # Every sample of the thread, its start-up included (the kernel-side
    # mappings unwind it from the first sample); the "after start-up" share
    # is reported beside it, not judged.
    if (job.get("complete_all") or 0) < min_complete:
        out.append(f"{row['kernel']}: fio's job thread {job.get('complete_all')}% complete "
                   f"(< {min_complete}%)")
    if job.get("callsite") is not None and job["callsite"] < 95:
        out.append(f"{row['kernel']}: fio's job thread call sites {job['callsite']}% (< 95%)")
    off = row.get("offcpu") or {}
    ratio = off.get("b_to_a")
    if row.get("offcpu_rc") != 0 or ratio is None or abs(ratio - OFFCPU_RATIO) > OFFCPU_TOLERANCE \
            or off.get("incomplete_ns"):
        out.append(f"{row['kernel']}: off-CPU of offcpu_sleep: rc {row.get('offcpu_rc')}, b:a "
                   f"{ratio} (want {OFFCPU_RATIO} +- {OFFCPU_TOLERANCE}), "
                   f"{off.get('incomplete_ns')} ns in stacks short of _start (want 0)")
    return out


def table(rows):
    lines = ["| kernel | who runs it | loads | user walk | sampler insns (verifier) | objects built on other "
             "BTFs load | fio job thread complete %: steady / all (samples) | whole run complete % | agent intervals | off-CPU b:a | wall s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        loads = "yes" if r["check_rc"] == 0 else f"no: {r['check'].get('error') or '?'}"
        insns = r["check"]["programs"].get("ehprof_sample", "-")
        walk = r["check"].get("walk", "-")
        if walk == "tail calls":
            insns = f"{insns} + {r['check']['programs'].get('ehprof_sample_walk', '-')} (walk)"
        objs = ", ".join(f"{k} {'yes' if v == 0 else 'NO'}" for k, v in sorted(r["objects"].items()))
        if r["check_rc"] != 0:
            objs = "refused before loading" if r["objects"] else ""
        rec = r.get("record", {})
        job = rec.get("job", {})
        jc = (f"{job['complete']:.1f} / {job['complete_all']:.1f} ({job['samples']})"
              if job.get("complete") is not None else "-")
        wc = f"{rec['complete']:.1f}" if rec.get("complete") is not None else "-"
        off = (r.get("offcpu") or {}).get("b_to_a")
        lines.append(f"| {r['uname'] or r['kernel']} | {r['who']} | {loads} | {walk} | {insns} | "
                     f"{objs or '-'} | {jc} | {wc} | {r.get('agent_files') or '-'} | "
                     f"{off if off is not None else '-'} | {r['seconds']} |")
    return "\n".join(lines)


def figures(rows, wall):
    """The matrix as docs/KERNELS.md's figures: ROW_KEY per kernel line (5_10, 6_1,
    6_12, newest, host)."""
    out = {"wall_seconds": round(wall)}
    for r in rows:
        k = r["kernel"].replace(".", "_")
        programs = r["check"]["programs"]
        if "ehprof_sample" in programs:
            out[f"{k}_sampler_insns"] = programs["ehprof_sample"]
        if "ehprof_sample_walk" in programs:
            out[f"{k}_walk_insns"] = programs["ehprof_sample_walk"]
        job = r.get("record", {}).get("job", {})
        if job.get("complete") is not None:
            out[f"{k}_job_complete_pct"] = job["complete"]
            out[f"{k}_job_complete_all_pct"] = job["complete_all"]
            out[f"{k}_job_samples"] = job["samples"]
        if r.get("agent_files") is not None:
            out[f"{k}_agent_intervals"] = r["agent_files"]
        off = (r.get("offcpu") or {}).get("b_to_a")
        if off is not None:
            out[f"{k}_offcpu_b_to_a"] = off
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", help="results directory (default: BUILD/kernels)")
    ap.add_argument("--kernels", default=",".join(KERNELS), help="kernel lines, comma-separated")
    ap.add_argument("--freq", type=int, default=199)
    ap.add_argument("--timeout", type=int, default=900,
                    help="seconds a guest may take (186 to 429 on an idle 2-vCPU machine, "
                         "two guests at once; the newest kernel's the longest)")
    ap.add_argument("--jobs", type=int, default=1 if guest_vm.kvm_usable() else os.cpu_count() or 1,
                    help="guests run at once (default: one per CPU under TCG, whose guests "
                         "take one host thread each; one under KVM)")
    ap.add_argument("--min-complete", type=float, default=95.0,
                    help="--check: least share of complete stacks in fio's job thread, "
                         "all of its samples")
    ap.add_argument("--no-host", action="store_true", help="skip this machine's own row")
    ap.add_argument("--check", action="store_true", help="exit 1 unless every expectation holds")
    ap.add_argument("--ehprof", help="the ehprof binary (default: BUILD/ehprof; BUILD is "
                    "$EHPROF_BUILD_DIR or build)")
    ap.add_argument("--result", nargs="?", const=os.path.join(result_file.RESULTS, "kernel_matrix.json"),
                    help="also write docs/KERNELS.md's figures (default path with no value: %(const)s); "
                         "not written unless asked, so a CI run leaves the committed file alone")
    ap.add_argument("--note", default="", help="said in the result file (e.g. the machine was loaded)")
    a = ap.parse_args()

    if os.geteuid() != 0:
        if os.environ.get("CI") == "true":
            sys.exit("kernel_matrix: CI=true but not root: the kernel matrix must run")
        print("SKIPPED: the kernel matrix needs root (BPF in the host row, /var/cache)")
        sys.exit(77)
    ehprof = os.path.abspath(a.ehprof or os.path.join(
        REPO, os.environ.get("EHPROF_BUILD_DIR", "build"), "ehprof"))
    build = os.path.dirname(ehprof)
    if not os.access(ehprof, os.X_OK):
        sys.exit(f"kernel_matrix: {ehprof} is not built (bash scripts/build.sh)")
    out = os.path.abspath(a.out or os.path.join(build, "kernels"))
    os.makedirs(out, exist_ok=True)
    shutil.rmtree(os.path.join(out, "objects"), ignore_errors=True)
    cache = os.environ.get("EHPROF_KERNEL_CACHE", "/var/cache/ehprof/kernels")
    apt = kernels.Apt(cache)
    apt.update()
    started = time.monotonic()

    # Every kernel's package, initramfs and BTF first: each guest then loads
    # the object built against every kernel's BTF (a BTF is cached by
    # package version; taking it costs one short boot).
    guests = []
    for line in [k for k in a.kernels.split(",") if k]:
        version_line, suites, who, expect = KERNELS[line]
        pkg, ver = apt.resolve(version_line, suites)
        tree = apt.fetch(pkg, ver)
        kver, vmlinuz = kernels.kernel_files(tree)
        res = os.path.join(out, line)
        shutil.rmtree(res, ignore_errors=True)
        os.makedirs(res)
        initramfs = os.path.join(out, f"initramfs-{line}.gz")
        kernels.build_initramfs(tree, kver, os.path.join(HERE, "init.sh"), initramfs)
        btf = os.path.join(cache, "btf", f"{pkg}_{ver}.btf")
        if not os.path.exists(btf):
            os.makedirs(os.path.dirname(btf), exist_ok=True)
            for _ in range(2):  # one more boot after a stall (see boot_guest)
                guest_vm.boot(vmlinuz, initramfs, res, {"EHPROF_REPO": REPO, "EHPROF_MODE": "btf"}, 300)
                if os.path.exists(os.path.join(res, "vmlinux.btf")):
                    break
            if os.path.exists(os.path.join(res, "vmlinux.btf")):
                shutil.move(os.path.join(res, "vmlinux.btf"), btf)
        obj_err = "no BTF"
        if os.path.exists(btf):
            _, obj_err = build_object(btf, line, out, build)
        guests.append((line, who, expect, vmlinuz, initramfs, res, pkg, ver, obj_err))

    env = {"EHPROF_REPO": REPO, "EHPROF_BIN": ehprof, "EHPROF_FREQ": str(a.freq),
           "EHPROF_OBJECTS": os.path.join(out, "objects")}
    rows = []
    if not a.no_host:
        res, secs = run_host(out, env)
        rows.append(summarize("host", "this machine", "runs", res, secs))
    def run_guest(g):
        line, who, expect, vmlinuz, initramfs, res, pkg, ver, obj_err = g
        print(f"kernel_matrix: booting {pkg} {ver} (qemu, {'KVM' if guest_vm.kvm_usable() else 'TCG'})",
              file=sys.stderr, flush=True)
        rc, secs, hung, retried = boot_guest(vmlinuz, initramfs, res, env, a.timeout)
        row = summarize(line, f"{who} ({pkg} {ver})", expect, res, secs, rc, hung is not None)
        row["boot_retried"] = retried
        if hung:
            row["hung"] = hung
            row["console_tail"] = guest_vm.console_tail(res)
            row["guest_log_tail"] = judge.read(os.path.join(res, "guest.log")).splitlines()[-6:]
        if obj_err:
            row["object_build_error"] = obj_err
        return row

    # Guests side by side: single-threaded TCG runs each on one host
    # thread, so a 2-CPU machine runs two in the time of one. The slowest
    # (the newest kernel's verifier under emulation) starts first.
    order = sorted(guests, key=lambda g: g[0] != "newest")
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        done = dict(zip([g[0] for g in order], pool.map(run_guest, order)))
    rows += [done[g[0]] for g in guests]

    md = table(rows)
    wall = time.monotonic() - started
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "wall_seconds": round(wall),
              "accel": "kvm" if guest_vm.kvm_usable() else "tcg", "freq": a.freq, "rows": rows}
    judge.write_results(out, result, md)
    if a.result:
        result_file.write("kernel_matrix", figures(rows, wall), a.note, a.result)
    print(f"kernel_matrix: {wall:.0f} s in all; results in {out}")
    if a.check:
        judge.exit_on([p for r in rows for p in problems(r, a.min_complete)], "kernel_matrix")


if __name__ == "__main__":
    main()
