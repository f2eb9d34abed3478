"""What bench/perl_cost.py, bench/php_cost.py and bench/ruby_cost.py
share: one workload of an interpreter recorded with its runtime's frames
and with --no-RUNTIME (the same process's native walk alone), runs
interleaved, ehprof's own per-sample BPF time (bench/bpf_time.py) over
each run's samples, the runtime's frames per sample counted in the
perf-script output by their script's suffix; medians over --reps, the
walk's added time the median of each repetition's two runs' difference.
Each run: the workload starts, after --warm seconds `ehprof record -p PID
-F HZ -d SECONDS` records it. With --before EHPROF (another build, the
change's base) each repetition also runs that build's pair, interleaved,
as the result's before_* keys. With --alternate each repetition is one
run of each build with --alternate-interp-walks: every other sample of a
CPU walks native frames only, so the two halves meet the same load sample
by sample and the added time is their difference within the run.

Two figures a run: the median sample's time, and p10 (a tenth of the
samples take less). On this 2-vCPU VM a run's median moves by 2-3x from
one run to the next with the host's load (a sample only gains time from
cache misses, interrupts and stolen cycles); p10, the walk's own cost
with the least of that, moves less (2026-12-01: native-only p10 of 1.0 to
1.7 µs in most runs, 3.2 µs in the worst), so p10 is the figure a change
is judged by, and the median is said beside it. The workload runs on
the last CPU and ehprof on the others (--no-pin: wherever they fall), so
ehprof's user space does not evict the walk's data between samples."""
import argparse
import os
import statistics
import subprocess
import tempfile
import time

import bpf_time
import result_file


def frames_per_sample(perf_script, suffix, with_any=False):
    """Median frames whose dso ends in `suffix` (".php", ".rb") per sample
    (with_any: per sample that has one)."""
    counts = []
    for block in open(perf_script).read().split("\n\n"):
        if block.strip():
            counts.append(sum(1 for line in block.split("\n")[1:] if line.rstrip().endswith(suffix + ")")))
    if with_any:
        counts = [c for c in counts if c]
    return statistics.median(counts) if counts else 0


def pinned(args, argv, last):
    """argv under taskset: on the last CPU (last) or the others, unless --no-pin."""
    cpus = os.cpu_count() or 1
    if args.no_pin or cpus < 2:
        return argv
    return ["taskset", "-c", str(cpus - 1) if last else f"0-{cpus - 2}"] + argv


def run(args, argv, flags, suffix, tmp):
    """One run: argv (the workload, ending in its duration) recorded with
    `flags`: (median µs, p10 µs, frames a sample), and with
    --alternate-interp-walks among them the native-only half's (median µs,
    p10 µs) after those."""
    work = subprocess.Popen(pinned(args, argv, True), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(args.warm)
        out = os.path.join(tmp, "interp.perf")
        record = [args.ehprof, "record", "-p", str(work.pid), "-F", str(args.hz), "-d", str(args.seconds), "-o", out]
        err = subprocess.run(pinned(args, record + flags, False), capture_output=True, text=True, check=True,
                             timeout=120).stderr
    finally:
        work.kill()
        work.wait()
    if "--alternate-interp-walks" in flags:
        a = bpf_time.alternate(err)
        return a["on"], a["on_p10"], frames_per_sample(out, suffix, True), a["off"], a["off_p10"]
    return bpf_time.bpf_us(err), bpf_time.bpf_p10_us(err), frames_per_sample(out, suffix)


def measure_all(args, argv, runtime, suffix):
    """{who: {"on", "off", "on_p10", "off_p10", "frames"}}, medians over
    --reps, for "after" (--ehprof) and, when --before is given, "before":
    every binary's runs interleave with the other's, so both meet the same
    load."""
    binaries = {"after": args.ehprof}
    if getattr(args, "before", None):
        binaries["before"] = args.before
    names = ("alternate",) if args.alternate else ("on", "off")
    runs = [(who, name) for who in binaries for name in names]
    results = {run_key: [] for run_key in runs}
    with tempfile.TemporaryDirectory() as tmp:
        for rep in range(args.reps):
            order = runs if rep % 2 == 0 else list(reversed(runs))
            for who, name in order:
                flags = {"on": [], "off": [f"--no-{runtime}"], "alternate": ["--alternate-interp-walks"]}[name]
                run_args = argparse.Namespace(**{**vars(args), "ehprof": binaries[who]})
                results[(who, name)].append(run(run_args, argv, flags, suffix, tmp))
    med = statistics.median
    out = {}
    for who in binaries:
        if args.alternate:  # each run's two halves side by side
            alt = results[(who, "alternate")]
            on, off = alt, [(r[3], r[4]) for r in alt]
        else:
            on, off = results[(who, "on")], results[(who, "off")]
        # What the walk adds: the median of each repetition's difference
        # (its two runs side by side, so a drift of the host's load over
        # the repetitions cancels), not the difference of the medians.
        out[who] = {"on": med(r[0] for r in on), "off": med(r[0] for r in off), "on_p10": med(r[1] for r in on),
                    "off_p10": med(r[1] for r in off), "frames": med(r[2] for r in on),
                    "added": med(a[0] - b[0] for a, b in zip(on, off)),
                    "added_p10": med(a[1] - b[1] for a, b in zip(on, off))}
    return out


def report(args, argv, runtime, suffix, label):
    """Measures, prints and (unless --no-result) writes bench/results/
    NAME.json (add_arguments): RUNTIME_bpf_us, native_bpf_us (medians over the
    repetitions), RUNTIME_added_us (the median of each repetition's
    difference), the same with _p10 (RUNTIME_p10_us, native_p10_us,
    RUNTIME_added_p10_us), RUNTIME_frames, and before_* of each when
    --before is given."""
    figs = measure_all(args, argv, runtime, suffix)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.2f}; "
          f"median of {args.reps} interleaved runs, {args.hz} Hz, {'not pinned' if args.no_pin else 'pinned'}"
          f"{', halves of each run (--alternate)' if args.alternate else ''}")
    figures = {"hz": args.hz, "reps": args.reps, "pinned": int(not args.no_pin), "alternate": int(args.alternate)}
    for who, f in figs.items():
        name = "" if who == "after" else f"before ({args.before}): "
        print(f"{name}{label}, {runtime} frames ({f['frames']:.0f} a sample): p10 {f['on_p10']:.2f} us, native walk "
              f"only {f['off_p10']:.2f} us, adds {f['added_p10']:.2f} us; median {f['on']:.2f} us, "
              f"native walk only {f['off']:.2f} us, adds {f['added']:.2f} us")
        pre = "" if who == "after" else "before_"
        figures.update({f"{pre}{runtime}_bpf_us": round(f["on"], 2), f"{pre}native_bpf_us": round(f["off"], 2),
                        f"{pre}{runtime}_added_us": round(f["added"], 2),
                        f"{pre}{runtime}_p10_us": round(f["on_p10"], 2),
                        f"{pre}native_p10_us": round(f["off_p10"], 2),
                        f"{pre}{runtime}_added_p10_us": round(f["added_p10"], 2)})
        if who == "after":
            figures[f"{runtime}_frames"] = f["frames"]
    if not args.no_result:
        result_file.write(args.bench_name, figures, args.note, args.result)


def add_arguments(ap, root, runtime, name=None):
    """The benches' arguments; `name` (default RUNTIME_cost) is the result's:
    bench/results/NAME.json, its "bench" field."""
    name = name or f"{runtime}_cost"
    ap.set_defaults(bench_name=name)
    ap.add_argument("--ehprof", default=os.path.join(root, "build", "ehprof"))
    ap.add_argument("--before", help="another ehprof build, measured interleaved with --ehprof's")
    ap.add_argument("--seconds", type=float, default=3)
    ap.add_argument("--warm", type=float, default=1)
    ap.add_argument("--hz", type=int, default=499)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--no-pin", action="store_true", help="do not pin the workload and ehprof to CPUs of their own")
    ap.add_argument("--alternate", action="store_true",
                    help="one run a repetition with --alternate-interp-walks: the native-only walk is every "
                         "other sample of the same run, not a run of its own")
    result_file.add_argument(ap, name)


def bench_main(doc, runtime, suffix, interp, script, label, name=None, **defaults):
    """A runtime's cost bench (bench/ruby_cost.py and the others): argument
    parsing with --interp (default `interp`), and its workload: the
    interpreter running testdata/SCRIPT[0]/SCRIPT[1] with SCRIPT[2:] and a
    duration past the recording's; `name` as add_arguments'. `defaults`
    override the arguments'."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    add_arguments(ap, root, runtime, name)
    ap.add_argument("--interp", default=interp)
    ap.set_defaults(**defaults)
    args = ap.parse_args()
    argv = ([args.interp, os.path.join(root, "testdata", script[0], script[1])] + list(script[2:]) +
            [str(args.warm + args.seconds + 5)])
    report(args, argv, runtime, suffix, label)
