#!/usr/bin/env python3
"""bench/soak.py's run_counts: the counts of the agent's last metrics line
and how often it went over --memory-limit, from the agent's log."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
from soak import run_counts  # noqa: E402

LOG = [
    "ehprof agent: samples 10, lost 0, intervals 1 (dropped 0), queued 1, RSS 29.1 MB = heap in use 6.9 MB;"
    " evicted 0 files (0.0 MB); largest: libc.so.6 0.1 MB, CPU 0.4 s\n",
    "ehprof: warning: something else\n",
    "ehprof agent: RSS 310.2 MB over --memory-limit 300 MB: evicted the symbol data of 3 files\n",
    "ehprof agent: samples 345309, lost 2, intervals 181 (dropped 59), queued 0, RSS 77.0 MB = heap in use"
    " 30.1 MB; evicted 23 files (3.1 MB); largest: libLLVM.so.15 4.0 MB, CPU 95.2 s\n",
]


def main():
    got = run_counts(LOG)
    want = {"samples": 345309, "lost": 2, "intervals": 181, "intervals_dropped": 59, "evicted_files": 23,
            "evicted_mb": 3.1, "over_memory_limit": 1}
    if got != want:
        sys.exit(f"run_counts: got {got}, want {want}")
    if run_counts(["ehprof: warning: no metrics yet\n"]) != {"over_memory_limit": 0}:
        sys.exit("run_counts: a log without a metrics line must give only over_memory_limit 0")
    print("soak_counts_test: ok")


if __name__ == "__main__":
    main()
