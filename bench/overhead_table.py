#!/usr/bin/env python3
"""Prints docs/FIGURES.md's overhead table from bench/results/overhead.json,
every figure marked for scripts/check_figures.py (paste it over the old
table after `python3 bench/overhead.py` rewrote the file)."""
import json
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS = [("ehprof record -a", "ehprof_record"), ("ehprof agent -a", "ehprof_agent"),
        ("OpenTelemetry eBPF profiler", "otel"), ("OTel profiler, its defaults (20 Hz)", "otel_defaults"),
        ("perf record -a --call-graph dwarf", "perf_dwarf"), ("perf record -a -g", "perf__g")]


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bench", "results", "overhead.json")
    figs = json.load(open(path))["figures"]
    rates = sorted({int(m.group(1)) for m in (re.search(r"_(\d+)hz_steady_cpu_pct$", k) for k in figs) if m})

    def cell(key, unit, dec):
        if key not in figs:
            return None
        v = figs[key]
        return f"{v:,.{dec}f}<!--fig:overhead/{key}-->{unit}"

    def per_rate(prefix, fig, unit, dec):
        cells = [cell(f"{prefix}_{hz}hz_{fig}", unit, dec) for hz in rates]
        cells = [c for c in cells if c]
        return " / ".join(cells) if cells else "—"

    print(f"| profiler | steady CPU {' / '.join(f'{hz} Hz' for hz in rates)} | start-up CPU | peak RSS | "
          f"BPF time per run of its perf_event programs | written |")
    print("|---|---|---|---|---|---|")
    for label, prefix in ROWS:
        if not any(k.startswith(prefix + "_") for k in figs):
            continue
        written = per_rate(prefix, "written_kib", " KiB", 0)
        if written == "—":
            written = per_rate(prefix, "bytes_per_sample", " B a sample", 0)
        print(f"| {label} | {per_rate(prefix, 'steady_cpu_pct', ' %', 2)} | "
              f"{per_rate(prefix, 'startup_cpu_s', ' s', 2)} | {per_rate(prefix, 'rss_mb', ' MB', 0)} | "
              f"{per_rate(prefix, 'bpf_us', ' µs', 1)} | {written} |")


if __name__ == "__main__":
    main()
