#!/usr/bin/env python3
"""The kernel matrix's arm64 guest: the cross-built ehprof (scripts/build.sh
--arch arm64) on Debian 12's arm64 kernel under qemu-system-aarch64 (TCG,
`-machine virt -cpu max`: PAC and BTI on), over a root made of Debian's
arm64 packages (arm64_guest.py). In the guest: `ehprof check`, then for
Debian 12's fio and Debian 13's PAC-signed fio a short run under `ehprof
record` and the same run under `perf record --call-graph dwarf,65528`,
both dumped as perf-script. Judged on the host: fio's job thread by
stackcheck (complete after its start-up, and over all its samples), call
sites (a64_judge.py), and agreement of ehprof's stacks with perf's
(stackcheck --ref). Writes matrix.json and matrix.md into --out.
"""
import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import time

# Milliseconds a sleep's block may measure short of the sleep under TCG
# (see the off-CPU check below).
TCG_SLEEP_SLACK_MS = 2

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import a64_judge  # noqa: E402
import a64_programs  # noqa: E402
import arm64_guest  # noqa: E402
import guest_vm  # noqa: E402
import judge  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(HERE)), "bench"))
import result_file  # noqa: E402  (bench/result_file.py: the figures docs/ quotes)

RELEASES = {"12": "Debian 12's fio", "13": "Debian 13's fio (PAC, BTI)"}


def judge_dump(dump, rootdir, work):
    """One perf-script dump written in the guest: its job thread judged."""
    os.makedirs(work, exist_ok=True)
    host = arm64_guest.host_view(dump, rootdir, os.path.join(work, "host.perf-script"))
    exiting = a64_judge.drop_exit_samples(host)
    # The job is fio's forked process, not fio's own: under TCG the start-up
    # of Debian 13's fio (ld.so relocating libceph-common, librbd, ... and
    # their constructors) outweighs the job in samples.
    out = judge.judge_record(host, work, skip_first=True)
    job = out.get("job", {})
    if job.get("tid"):
        job["path"] = os.path.join(work, f"job-{job['tid']}.perf-script")
        job["outermost"] = a64_judge.outermost_frames(
            os.path.join(work, f"job-{job['tid']}-steady.perf-script"))
        job["callsite"] = a64_judge.callsite_pct(job["path"])  # stackcheck's is x86's
    out["exit_samples"] = exiting
    return out


def agreement(dump, ref):
    """stackcheck --ref: the share of dump's samples whose chain of call
    sites also occurs in ref's."""
    tool = judge.find_stackcheck()
    if not tool:
        return a64_judge.agree_pct(dump, ref)
    r = subprocess.run([sys.executable, tool, "--json", "--ref", ref, dump],
                       capture_output=True, text=True)
    return json.loads(r.stdout).get("agree_pct") if r.returncode == 0 else None


def summarize(res, rootdir, bindir, seconds, hung):
    g = judge.load_json(os.path.join(res, "guest.json")) or {}
    row = {"uname": g.get("uname"), "arch": g.get("arch"), "seconds": round(seconds, 1),
           "timed_out": hung is not None, "hung": hung, "guest": g,
           "pac": "paca" in judge.read(os.path.join(res, "cpu_features.txt")).split(),
           "check_rc": g.get("check_rc"),
           "check": judge.parse_check(judge.read(os.path.join(res, "check.txt"))), "fio": {}}
    for rel in RELEASES:
        fio = {}
        for who in ("ehprof", "perf"):
            dump = os.path.join(res, f"fio{rel}.{who}.perf-script")
            rc = g.get(f"record{rel}" if who == "ehprof" else f"perf{rel}")
            fio[who] = {"rc": rc}
            if rc == 0 and os.path.exists(dump) and os.path.getsize(dump):
                fio[who].update(judge_dump(dump, rootdir, os.path.join(res, f"judge{rel}-{who}")))
        ej, pj = (fio[w].get("job", {}).get("path") for w in ("ehprof", "perf"))
        if ej and pj:
            fio["agree"] = agreement(ej, pj)
            fio["perf_agree"] = agreement(pj, ej)
        fp = os.path.join(res, f"fio{rel}.perf-fp.perf-script")
        if g.get(f"perf{rel}fp") == 0 and os.path.exists(fp) and ej:
            fio["perf_fp"] = judge_dump(fp, rootdir, os.path.join(res, f"judge{rel}-perf-fp"))
            fj = fio["perf_fp"].get("job", {}).get("path")
            fio["agree_fp"] = a64_judge.agree_pct(ej, fj, frame_records=True) if fj else None
        fio["summary"] = judge.first_line(judge.read(os.path.join(res, f"record{rel}.txt")),
                                          "user stacks complete")
        row["fio"][rel] = fio
    row["programs"] = {}
    for name in a64_programs.CHAINS:
        dump = os.path.join(res, f"{name}.perf-script")
        got = {"rc": g.get(name)}
        if got["rc"] == 0 and os.path.exists(dump):
            got.update(a64_programs.judge_program(dump, name, rootdir, bindir))
        row["programs"][name] = got
    dump = os.path.join(res, "offcpu.perf-script")
    row["offcpu_rc"] = g.get("offcpu")
    row["offcpu"] = (a64_programs.judge_offcpu(dump, rootdir, bindir)
                     if g.get("offcpu") == 0 and os.path.exists(dump) else None)
    row["agent_rc"], row["agent_files"] = g.get("agent"), g.get("agent_files")
    return row


def problems(row, min_complete, min_agree, min_agree_fp):
    """What failed in a guest's row, each naming its kernel."""
    tag = f"arm64 {row.get('kernel_package') or row.get('uname')}:"
    return [tag + m[len("arm64:"):] if m.startswith("arm64:") else m
            for m in _problems(row, min_complete, min_agree, min_agree_fp)]


def _problems(row, min_complete, min_agree, min_agree_fp):
    if row["timed_out"]:
        where = ("never reached its init (twice)" if row["hung"] == "boot"
                 else "ran init but did not finish in time")
        return [f"arm64: the guest {where}; console: {row.get('console_tail')}; "
                f"guest.log: {row.get('guest_log_tail')}"]
    out = []
    if not row["pac"]:
        out.append("arm64: the guest CPU has no pointer authentication (paca), so Debian 13's "
                   "fio is not run signed")
    if row["check_rc"] != 0:
        out.append(f"arm64: ehprof check exited {row['check_rc']}: {row['check'].get('error')}")
        return out
    for rel, what in RELEASES.items():
        fio = row["fio"][rel]
        for who in ("ehprof", "perf") if row.get("with_perf", True) else ("ehprof",):
            if fio[who]["rc"] != 0:
                out.append(f"arm64: {who} record of {what} exited {fio[who]['rc']}")
        job = fio["ehprof"].get("job", {})
        if fio["ehprof"]["rc"] != 0:
            continue
        if (job.get("complete") or 0) < min_complete:
            out.append(f"arm64: {what}: the job thread {job.get('complete')}% complete after "
                       f"start-up (< {min_complete}%); its walks ended most at "
                       f"{', '.join(job.get('outermost') or [])}; ehprof said: {fio.get('summary')}")
        if (job.get("callsite") or 0) < 95:
            out.append(f"arm64: {what}: the job thread's call sites {job.get('callsite')}% (< 95%)")
        # Agreement is asked where perf's own stacks are complete: perf
        # (Debian 12's, libdw; Debian 13's, libunwind) does not strip PAC
        # signatures, so in Debian 13's fio it stops at the first signed
        # return address (reported in the table, docs/KERNELS.md: arm64).
        if not row.get("with_perf", True):
            continue
        perf_job = fio["perf"].get("job", {})
        # Debian 12's fio has no PAC signature for perf's DWARF walk to
        # stop at: a reference incomplete there is a broken reference
        # (lost events), not a pass.
        if rel == "12" and (perf_job.get("complete") or 0) < min_complete:
            out.append(f"arm64: {what}: perf's own reference is {perf_job.get('complete')}% complete "
                       f"(< {min_complete}%), so ehprof's stacks were not compared with it")
        if (perf_job.get("complete") or 0) >= min_complete and (fio.get("agree") or 0) < min_agree:
            out.append(f"arm64: {what}: {fio.get('agree')}% of the job thread's stacks occur in "
                       f"perf's (< {min_agree}%; perf's in ehprof's: {fio.get('perf_agree')}%)")
        if rel == "13" and (fio.get("agree_fp") or 0) < min_agree_fp:
            out.append(f"arm64: {what}: {fio.get('agree_fp')}% of the job thread's stacks occur in "
                       f"perf -g's frame records (< {min_agree_fp}%)")
    # testdata's programs: 2 s each at 499 Hz; the chains as the x86-64
    # tests ask them (tests/record_priv_test.cc, record_jit_priv_test.cc).
    for name, got in row.get("programs", {}).items():
        if got.get("rc") != 0:
            out.append(f"arm64: ehprof record of {name} exited {got.get('rc')}")
        elif (got.get("leaf_samples") or 0) < 30:
            out.append(f"arm64: {name}: {got.get('leaf_samples')} samples at its leaf (< 30) "
                       f"of {got.get('samples')}")
        elif (got.get("chain_pct") or 0) < 90:
            out.append(f"arm64: {name}: {got.get('chain_pct')}% of its leaf's samples show the "
                       f"expected chain down to readelf's bottom frame (< 90%; "
                       f"{got.get('complete_pct')}% reach the bottom)")
    off = row.get("offcpu") or {}
    if row.get("offcpu_rc") != 0:
        out.append(f"arm64: ehprof record --off-cpu exited {row.get('offcpu_rc')}")
    elif (off.get("mean_a_ms") or 0) < 100 - TCG_SLEEP_SLACK_MS or \
            (off.get("mean_b_ms") or 0) < 300 - TCG_SLEEP_SLACK_MS or \
            abs((off.get("mean_diff_ms") or 0) - 200) > 25 or off.get("incomplete_ns"):
        # As tests/record_offcpu_priv_test.cc asks on x86-64, but for the
        # emulated CPU's time between arming the sleep's timer and leaving
        # the CPU, where the block starts (6.1 under TCG: 99.6 ms of 100).
        out.append(f"arm64: off-CPU blocks of offcpu_sleep: means {off.get('mean_a_ms')} / "
                   f"{off.get('mean_b_ms')} ms (want >= {100 - TCG_SLEEP_SLACK_MS} / "
                   f"{300 - TCG_SLEEP_SLACK_MS}, 200 +- 25 apart, every block to the bottom): {off}")
    if row.get("agent_rc") != 0 or (row.get("agent_files") or 0) < 2:
        out.append(f"arm64: ehprof agent exited {row.get('agent_rc')} with "
                   f"{row.get('agent_files')} interval files (want 0 and >= 2)")
    return out


def table(row):
    lines = ["| kernel (arm64) | fio | sampler insns (verifier) | ehprof: job thread complete %: "
             "after start-up / all (samples), call sites % | perf dwarf: the same | "
             "ehprof's stacks in perf's % / perf's in ehprof's % |", "|---|---|---|---|---|---|"]
    insns = row["check"]["programs"].get("ehprof_sample", "-")

    def fig(j):
        if j.get("complete") is None:
            return "-"
        return (f"{j['complete']:.1f} / {j['complete_all']:.1f} ({j['samples']}), "
                f"{j.get('callsite')}")
    for rel, what in RELEASES.items():
        fio = row["fio"].get(rel, {})
        e, p = (fio.get(w, {}).get("job", {}) for w in ("ehprof", "perf"))
        agree = f"{fio.get('agree', '-')} / {fio.get('perf_agree', '-')}"
        if fio.get("perf_fp"):
            f = fio["perf_fp"].get("job", {})
            agree += (f"; perf -g (frame records): {f.get('complete_all')} % complete "
                      f"({f.get('samples')}), ehprof's stacks in its {fio.get('agree_fp')} %")
        lines.append(f"| {row['uname']} | {what} | {insns} | {fig(e)} | {fig(p)} | {agree} |")
    lines += ["", "| testdata program (arm64, stripped) | samples at its leaf / all | reach the bottom % | "
              "expected chain % |", "|---|---|---|---|"]
    for name, got in row.get("programs", {}).items():
        lines.append(f"| {name} | {got.get('leaf_samples')} / {got.get('samples')} | "
                     f"{got.get('complete_pct')} | {got.get('chain_pct')} |")
    off = row.get("offcpu") or {}
    lines.append(f"\noff-CPU blocks: sleep_a {off.get('mean_a_ms')} ms ({off.get('blocks_a')}), sleep_b "
                 f"{off.get('mean_b_ms')} ms ({off.get('blocks_b')}), b:a {off.get('b_to_a')}; "
                 f"agent interval files {row.get('agent_files')}")
    return "\n".join(lines)


def figures(row):
    """A guest's run as docs/KERNELS.md's figures: d12_* and d13_* per Debian fio."""
    out = {"guest_seconds": row["seconds"]}
    if "ehprof_sample" in row["check"]["programs"]:
        out["sampler_insns"] = row["check"]["programs"]["ehprof_sample"]
    for rel in RELEASES:
        fio = row["fio"].get(rel, {})
        for who in ("ehprof", "perf", "perf_fp"):
            job = (fio.get(who) or {}).get("job", {})
            if job.get("complete") is None:
                continue
            for key in ("complete", "complete_all", "samples", "callsite"):
                if job.get(key) is not None:
                    out[f"d{rel}_{who}_{key}"] = job[key]
        for key in ("agree", "perf_agree", "agree_fp"):
            if isinstance(fio.get(key), (int, float)):
                out[f"d{rel}_{key}"] = fio[key]
    for name, got in row.get("programs", {}).items():
        for key in ("samples", "leaf_samples", "complete_pct", "chain_pct"):
            if isinstance(got.get(key), (int, float)):
                out[f"{name}_{key}"] = got[key]
    for key in ("b_to_a", "mean_a_ms", "mean_b_ms", "mean_diff_ms"):
        if (row.get("offcpu") or {}).get(key) is not None:
            out["offcpu_" + key] = row["offcpu"][key]
    if row.get("agent_files") is not None:
        out["agent_intervals"] = row["agent_files"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", required=True, help="the arm64 ehprof (scripts/build.sh --arch arm64)")
    ap.add_argument("--out", required=True, help="results directory")
    # 199 Hz: ~600 samples a fio run. Agreement with perf compares two
    # separate runs' chains; at 99 Hz (~300 samples) it read 90.1 % on a
    # quiet host and 71.9 % under CI's load (2026-11-30), chains sampled
    # once in one run and never in the other.
    ap.add_argument("--freq", type=int, default=199)
    ap.add_argument("--runtime", type=int, default=3, help="seconds of each fio job")
    ap.add_argument("--startdelay", type=int, default=6,
                    help="seconds before fio's job starts (ehprof's tables build meanwhile)")
    ap.add_argument("--timeout", type=int, default=2400, help="seconds a guest may take")
    ap.add_argument("--jobs", type=int, default=2, help="guests run at once")
    ap.add_argument("--min-complete", type=float, default=99.0,
                    help="--check: least share of complete stacks in fio's job thread after start-up")
    ap.add_argument("--min-agree", type=float, default=75.0,
                    help="--check: least share of the job thread's stacks found in perf's "
                         "(where perf's DWARF stacks are complete)")
    ap.add_argument("--min-agree-fp", type=float, default=50.0,
                    help="--check: the same against perf -g's frame records (Debian 13's fio)")
    ap.add_argument("--check", action="store_true", help="exit 1 unless every expectation holds")
    ap.add_argument("--kernels", default="bookworm,trixie",
                    help="Debian releases whose arm64 kernel to boot, comma-separated; perf's "
                         "references run under the first")
    ap.add_argument("--result", nargs="?",
                    const=os.path.join(result_file.RESULTS, "kernel_matrix_arm64.json"),
                    help="also write docs/KERNELS.md's figures (default path with no value: %(const)s); "
                         "not written unless asked, so a CI run leaves the committed file alone")
    ap.add_argument("--note", default="", help="said in the result file (e.g. the machine was loaded)")
    a = ap.parse_args()
    started = time.monotonic()
    rootdir = arm64_guest.root()
    out = os.path.abspath(a.out)
    bindir = os.path.dirname(os.path.abspath(a.ehprof))
    err = a64_programs.build(os.path.join(bindir, "testdata-a64"))
    if err:
        sys.exit(f"kernel_matrix arm64: building testdata's programs for arm64: {err}")
    suites = [k for k in a.kernels.split(",") if k]

    def run_guest(suite):
        pkg, ver, kver, image, tree = arm64_guest.kernel(suite=suite)
        res = os.path.join(out, "arm64" if suite == "bookworm" else f"arm64-{suite}")
        shutil.rmtree(res, ignore_errors=True)
        os.makedirs(res)
        initrd = arm64_guest.initramfs(tree, kver, rootdir, os.path.join(out, f"initramfs-arm64-{suite}.gz"))
        for script in ("guest_arm64.sh", "guest_common.sh"):
            shutil.copy(os.path.join(HERE, script), res)
        # perf's references run under the first kernel only: what they
        # judge is the walk, which a second kernel does not change; the
        # second shows that kernel loads and runs it.
        with_perf = suite == suites[0]
        env = {"EHPROF_FREQ": str(a.freq), "EHPROF_RUNTIME": str(a.runtime),
               "EHPROF_STARTDELAY": str(a.startdelay), "EHPROF_PERF": "1" if with_perf else "0"}
        print(f"kernel_matrix: booting {pkg} {ver} (qemu-system-aarch64, TCG)", file=sys.stderr, flush=True)

        def run():
            return arm64_guest.boot(image, initrd, rootdir, bindir, res, env, a.timeout)
        rc, secs, hung, retried = guest_vm.boot_with_retry(run, res)
        row = summarize(res, rootdir, bindir, secs, hung)
        row.update({"suite": suite, "kernel_package": f"{pkg} {ver}", "boot_rc": rc,
                    "boot_retried": retried, "with_perf": with_perf})
        if hung:
            row["console_tail"] = guest_vm.console_tail(res)
            row["guest_log_tail"] = judge.read(os.path.join(res, "guest.log")).splitlines()[-6:]
        return row

    # Guests side by side: a guest alone keeps about one host CPU busy
    # (the verifier, ehprof's start-up and fio's job are one thread each;
    # 2026-12-02, top: 107 %), so on a 2-CPU host two at once take less
    # than two in a row (911 s against 591 s for Debian 12's guest alone).
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as pool:
        rows = list(pool.map(run_guest, suites))
    md = "\n\n".join(table(r) for r in rows)
    wall = time.monotonic() - started
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "wall_seconds": round(wall),
              "accel": "tcg", "freq": a.freq, "runtime": a.runtime,
              "startdelay": a.startdelay, "rows": rows}
    judge.write_results(out, result, md)
    if a.result:
        figs = {"wall_seconds": round(wall)}
        for r in rows:
            prefix = "" if r["suite"] == "bookworm" else r["suite"] + "_"
            figs.update({prefix + k: v for k, v in figures(r).items()})
        result_file.write("kernel_matrix_arm64", figs, a.note, a.result)
    print(f"kernel_matrix arm64: {wall:.0f} s in all "
          f"({', '.join(str(r['seconds']) for r in rows)} s in the guests); results in {out}")
    if a.check:
        judge.exit_on([p for r in rows for p in problems(r, a.min_complete, a.min_agree, a.min_agree_fp)],
                      "kernel_matrix arm64")


if __name__ == "__main__":
    main()
