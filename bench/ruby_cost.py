#!/usr/bin/env python3
"""BPF time per sample of the Ruby walk: Debian 12's ruby3.1 running
testdata/ruby/deep.rb (deep() recursing 50 Ruby frames, spinning at the
bottom in Ruby code, all in one vm_exec_core call), recorded with its Ruby
frames and with --no-ruby (the same process's native walk alone:
vm_exec_core and its callers), so the difference is what the Ruby walk adds
per sample. Each run:
the workload starts, after --warm seconds `ehprof record -p PID -F HZ -d
SECONDS` records it; the figure is ehprof's own per-sample BPF time
(bpf/*: the sampler's clock, median over the run's samples, as
bench/jvm_node_cost.py reads it; bench/interp_cost.py). Runs interleave; figures are medians
over --reps. Ruby frames per sample: the median count in the run's
perf-script output. With --before EHPROF (another build, the change's
base) each repetition also runs that build's pair, interleaved, and both
are written. Needs root and ruby3.1. Writes bench/results/ruby_cost.json.
  python3 bench/ruby_cost.py [--reps 3] [--seconds 3] [--before EHPROF]
"""
import argparse
import copy
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import interp_cost  # noqa: E402
import result_file  # noqa: E402

DEEP = os.path.join(ROOT, "testdata", "ruby", "deep.rb")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    interp_cost.add_arguments(ap, ROOT)
    ap.add_argument("--ruby", default="/usr/bin/ruby3.1")
    ap.add_argument("--before", help="another ehprof build, measured interleaved with --ehprof's")
    result_file.add_argument(ap, "ruby_cost")
    args = ap.parse_args()
    argv = [args.ruby, DEEP, str(args.warm + args.seconds + 5)]
    if not args.before:
        on_us, native_us, frames = interp_cost.measure(args, argv, "ruby", ".rb")
        before = None
    else:
        runs = {"after": [], "before": []}
        for rep in range(args.reps):
            for name in (["after", "before"] if rep % 2 == 0 else ["before", "after"]):
                one = copy.copy(args)
                one.reps, one.ehprof = 1, args.ehprof if name == "after" else args.before
                runs[name].append(interp_cost.measure(one, argv, "ruby", ".rb"))
        med = statistics.median
        on_us, native_us, frames = (med(r[i] for r in runs["after"]) for i in range(3))
        before = [med(r[i] for r in runs["before"]) for i in range(3)]
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average {os.getloadavg()[0]:.2f}; "
          f"median of {args.reps} interleaved runs, {args.hz} Hz")
    print(f"ruby3.1 deep, Ruby frames ({frames:.0f} a sample): {on_us:.2f} us; native walk only: {native_us:.2f} us; "
          f"the Ruby walk adds {on_us - native_us:.2f} us")
    figures = {"ruby_bpf_us": round(on_us, 2), "native_bpf_us": round(native_us, 2),
               "ruby_added_us": round(on_us - native_us, 2), "ruby_frames": frames, "hz": args.hz,
               "reps": args.reps}
    if before:
        print(f"before ({args.before}): {before[0]:.2f} us; native walk only: {before[1]:.2f} us; "
              f"the Ruby walk added {before[0] - before[1]:.2f} us")
        figures.update({"before_ruby_bpf_us": round(before[0], 2), "before_native_bpf_us": round(before[1], 2),
                        "before_ruby_added_us": round(before[0] - before[1], 2)})
    if not args.no_result:
        result_file.write("ruby_cost", figures, args.note, args.result)


if __name__ == "__main__":
    main()
