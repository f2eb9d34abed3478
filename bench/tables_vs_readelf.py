#!/usr/bin/env python3
"""Table build speed against binutils' readelf, measured in one run.

For each ELF: wall time (best of --runs) and peak RSS of
  readelf --debug-dump=frames-interp FILE > tmpfile   (the reference dump)
  ehprof tables --stats FILE                           (build + compact encode)
  ehprof tables FILE > tmpfile                         (build + print every row)
and the ratio readelf / ehprof. Absolute times on a shared machine are noisy;
the ratios are what to quote. Writes bench/results/tables_vs_readelf.json:
per file (key prefix: the file's name, non-alphanumerics as _) rows,
bytes_per_row, readelf_s, stats_s, x_stats, rss_mb; and bytes_per_row_min/max
over the files.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

import result_file

DEFAULT_FILES = [
    "/usr/bin/fio",
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/bin/python3.11",
    "/usr/lib/x86_64-linux-gnu/libLLVM-15.so.1",
]


def run(cmd, out_path, check=True):
    """Wall seconds and peak RSS (KiB) of one run, stdout to out_path."""
    with open(out_path, "wb") as out:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.DEVNULL)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
    if check and os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed")
    return wall, usage.ru_maxrss


def best(cmd, out_path, runs, check=True):
    results = [run(cmd, out_path, check) for _ in range(runs)]
    return min(r[0] for r in results), max(r[1] for r in results)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ehprof", default=os.path.join(
        os.path.dirname(__file__), "..", "build", "ehprof"))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("files", nargs="*", default=DEFAULT_FILES)
    result_file.add_argument(ap, "tables_vs_readelf")
    a = ap.parse_args()
    figures = {}
    tmp = tempfile.mkdtemp(prefix="ehprof-bench-")
    out = os.path.join(tmp, "out.txt")
    print(f"{'file':44} {'readelf_s':>9} {'stats_s':>8} {'text_s':>8} "
          f"{'x_stats':>8} {'x_text':>7} {'rss_MB':>7}  stats")
    for f in a.files:
        if not os.path.exists(f):
            print(f"{f:44} missing")
            continue
        # readelf exits 1 on some files after a complete dump (e.g. "Unable
        # to find program interpreter name" on libc), so its status is not
        # checked.
        r_s, _ = best(["readelf", "--debug-dump=frames-interp", f], out, a.runs,
                      check=False)
        s_s, s_rss = best([a.ehprof, "tables", "--stats", f], out, a.runs)
        stats = open(out).read().strip()
        t_s, t_rss = best([a.ehprof, "tables", f], out, a.runs)
        print(f"{f:44} {r_s:9.3f} {s_s:8.3f} {t_s:8.3f} {r_s / s_s:8.1f} "
              f"{r_s / t_s:7.1f} {max(s_rss, t_rss) / 1024:7.1f}  {stats}")
        sys.stdout.flush()
        kv = dict(field.split("=", 1) for field in stats.split() if "=" in field)
        key = re.sub(r"[^A-Za-z0-9]+", "_", os.path.basename(f))
        figures.update({f"{key}_rows": int(kv["rows"]),
                        f"{key}_bytes_per_row": float(kv["bytes_per_row"]),
                        f"{key}_readelf_s": round(r_s, 4), f"{key}_stats_s": round(s_s, 4),
                        f"{key}_x_stats": round(r_s / s_s, 2),
                        f"{key}_rss_mb": round(max(s_rss, t_rss) / 1024, 1)})
    os.remove(out)
    os.rmdir(tmp)
    per_row = [v for k, v in figures.items() if k.endswith("_bytes_per_row")]
    if per_row:
        figures.update(bytes_per_row_min=min(per_row), bytes_per_row_max=max(per_row))
    if not a.no_result:
        result_file.write("tables_vs_readelf", figures, a.note, a.result)


if __name__ == "__main__":
    main()
