#!/usr/bin/env python3
"""docs/KERNELS.md's kernel-matrix table ("Tested kernels") from bench/results/kernel_matrix.json
(`scripts/kernel_matrix.sh --check --result`), every figure with its marker
(scripts/check_figures.py), ready to paste:

  python3 scripts/kernel_matrix/readme_table.py [RESULT.json]
"""
import json
import os
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROWS = [  # result key prefix, the table's kernel column, the walk it runs
    ("host", "6.18 (this machine)", "bpf_loop"),
    ("6_1", "6.1 (Debian 12 stock)", "bpf_loop"),
    ("6_12", "6.12 (Debian 12 bookworm-backports)", "bpf_loop"),
    ("5_10", "5.10 (Debian 11 stock)", "tail calls"),
    ("newest", "newest Debian ships (Debian 13 trixie-backports)", "bpf_loop"),
]


def fig(figures, key, fmt=None):
    """The figure as docs/KERNELS.md writes it (integers with thousands
    separators, percentages to one decimal unless fmt says), marked."""
    v = figures[key]
    text = (fmt or ("{:.1f}" if isinstance(v, float) else "{:,}")).format(v)
    return f"{text}<!--fig:kernel_matrix/{key}-->"


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(REPO, "bench", "results", "kernel_matrix.json")
    with open(path) as f:
        doc = json.load(f)
    figures = doc["figures"]
    print(f"Run of {doc['date']} (`{doc['command']}`, commit {doc['commit']}; "
          f"{fig(figures, 'wall_seconds')} s for the whole matrix; {doc['machine']['kind']}, "
          f"{doc['machine']['cpus']} CPUs, load average {doc['machine']['loadavg_start']} at the start):\n")
    print("| kernel | user walk | sampler insns | fio job thread complete: after start-up / all (samples) "
          "| agent intervals | off-CPU b:a |")
    print("|---|---|---|---|---|---|")
    for key, name, walk in ROWS:
        if f"{key}_job_samples" not in figures:
            continue
        insns = fig(figures, f"{key}_sampler_insns")
        if f"{key}_walk_insns" in figures:
            insns += " + " + fig(figures, f"{key}_walk_insns") + " (walk program)"
        job = (f"{fig(figures, f'{key}_job_complete_pct')} % / {fig(figures, f'{key}_job_complete_all_pct')} % "
               f"({fig(figures, f'{key}_job_samples')})")
        off = fig(figures, f"{key}_offcpu_b_to_a", "{}") if f"{key}_offcpu_b_to_a" in figures else "—"
        agent = fig(figures, f"{key}_agent_intervals") if f"{key}_agent_intervals" in figures else "—"
        print(f"| {name} | {walk} | {insns} | {job} | {agent} | {off} |")


if __name__ == "__main__":
    main()
