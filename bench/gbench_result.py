#!/usr/bin/env python3
"""Runs a Google Benchmark binary of bench/ and writes its figures as a
bench result (bench/results/NAME.json): for each benchmark, its CPU time
in the benchmark's own unit (KEY_ns, KEY_us, KEY_ms, KEY_s; with
repetitions, the median's, as KEY_median_UNIT), its real time
(KEY_real_UNIT) and its counters (KEY_COUNTER). The CPU time is the figure
to quote on a shared machine: the real time also counts the waits for a
CPU that other work causes.

  python3 bench/gbench_result.py bench_tables build/bench/bench_tables --benchmark_filter=Lookup
  python3 bench/gbench_result.py bench_symbolize build/bench/bench_symbolize

KEY is the benchmark's name without BM_ and options (repeats:5,
iterations:3), non-alphanumerics as _.
"""
import argparse
import json
import re
import subprocess
import sys

import result_file

UNITS = {"ns": "ns", "us": "us", "ms": "ms", "s": "s"}
SKIP = {"name", "run_name", "run_type", "repetitions", "repetition_index", "threads", "iterations",
        "real_time", "cpu_time", "time_unit", "family_index", "per_family_instance_index",
        "aggregate_name", "aggregate_unit", "error_occurred", "error_message"}


def key_of(run_name):
    parts = [p for p in run_name.split("/") if ":" not in p]
    return re.sub(r"[^A-Za-z0-9]+", "_", "_".join(parts).removeprefix("BM_")).strip("_")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("name", help="result name (bench/results/NAME.json)")
    ap.add_argument("binary")
    ap.add_argument("args", nargs=argparse.REMAINDER, help="passed to the benchmark")
    ap.add_argument("--note", default="")
    a = ap.parse_args()
    r = subprocess.run([a.binary, "--benchmark_format=json"] + a.args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"{a.binary} failed ({r.returncode}): {r.stderr[-1500:]}")
    doc = json.loads(r.stdout)
    figures = {}
    for b in doc["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        repeated = b.get("run_type") == "aggregate"
        if not repeated and b.get("repetitions", 1) > 1:
            continue  # single repetitions of a repeated benchmark: its median is kept
        key = key_of(b.get("run_name", b["name"])) + ("_median" if repeated else "")
        figures[f"{key}_{UNITS[b['time_unit']]}"] = round(b["cpu_time"], 4)
        figures[f"{key}_real_{UNITS[b['time_unit']]}"] = round(b["real_time"], 4)
        for k, v in b.items():
            if k not in SKIP and isinstance(v, (int, float)) and not isinstance(v, bool):
                figures[f"{key}_{re.sub(r'[^A-Za-z0-9]+', '_', k)}"] = round(v, 4)
        print(f"{key}: CPU {b['cpu_time']:.4g} {b['time_unit']}, real {b['real_time']:.4g}")
    result_file.write(a.name, figures, a.note)


if __name__ == "__main__":
    main()
