#!/usr/bin/env python3
"""The agent's state over a long run of DISTINCT short-lived binaries (issue
31): `ehprof agent -a` (--output-dir, 10 s intervals, its metrics endpoint)
while COUNT binaries run one after another, PARALLEL at a time, each a copy
of testdata's churn_child.stripped with its own build-id (a byte pattern
written into its GNU build-id note) and its own inode, in a tmpfs directory,
busy for BUSY_US microseconds, deleted once it exits. Every SAMPLE_S
seconds: the agent's fd count and how many of them are deleted files, its
RSS and CPU time, its own state metrics (kept files, tracked and remembered
processes, table files, BPF map entries), the entries of its BPF hash maps
(bpftool map dump) and the table cache's size. At the end: each series'
value once warm (WARM_FRACTION of the binaries run) and at the end, and its
slope per 10,000 binaries from there (least squares): flat means the state
follows what runs, not what ran.

  python3 bench/soak_distinct_binaries.py --count 100000
  python3 bench/soak_distinct_binaries.py --count 20000 --minutes 10   # as many as fit

--minutes caps the run: the binaries run so far are said, and the result
records them (binaries_run) beside the count asked for.
"""
import argparse
import json
import multiprocessing
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import result_file
from soak import stat as rss_cpu

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTE = b"\x04\x00\x00\x00\x14\x00\x00\x00\x03\x00\x00\x00GNU\x00"
SERIES = ("fds", "fds_deleted", "rss_mb", "cpu_s", "kept_files", "remembered_processes",
          "tracked_processes", "table_files", "bpf_procs", "bpf_file_tables", "bpf_offcpu_tasks",
          "bpf_notified", "bpf_tables", "bpf_pages", "table_cache_entries")


def agent_fds(pid):
    fds = deleted = 0
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        fds += 1
        deleted += target.endswith(" (deleted)")
    return fds, deleted


def scrape(port):
    """The agent's metrics: name{labels} -> value."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    out = {}
    for line in text.splitlines():
        if line and not line.startswith("#"):
            key, value = line.rsplit(" ", 1)
            out[key] = float(value)
    return out


def bpf_hash_entries(pid):
    """Entries of the agent's BPF hash maps by name: the maps its fds hold
    (map_id in /proc/PID/fdinfo), each dumped by bpftool."""
    ids = set()
    for fd in os.listdir(f"/proc/{pid}/fdinfo"):
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                info = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        if "map_id" in info and info.get("map_type", "").strip() in ("1", "9"):  # hash, lru_hash
            ids.add(int(info["map_id"]))
    out = {}
    for map_id in sorted(ids):
        try:
            show = json.loads(subprocess.run(["bpftool", "-j", "map", "show", "id", str(map_id)],
                                             capture_output=True, text=True, timeout=60).stdout)
            dump = subprocess.run(["bpftool", "-j", "map", "dump", "id", str(map_id)], capture_output=True,
                                  text=True, timeout=120).stdout
            out[show.get("name", str(map_id))] = len(json.loads(dump or "[]"))
        except (OSError, subprocess.TimeoutExpired, ValueError):
            pass
    return out


def run_load(image, directory, count, parallel, busy_us, stop_at, started, failed):
    """COUNT distinct binaries, PARALLEL at a time, each deleted when it
    exits. In a process of its own: its wait() reaps only these."""
    image = bytearray(image)
    note_at = image.find(NOTE)
    running = {}
    while (started.value < count and time.monotonic() < stop_at) or running:
        while len(running) < parallel and started.value < count and time.monotonic() < stop_at:
            i = started.value
            if note_at >= 0:
                at = note_at + len(NOTE)
                image[at:at + 8] = i.to_bytes(8, "little")
            path = os.path.join(directory, f"b{i}")
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o755)
            os.write(fd, image)
            os.close(fd)
            running[os.posix_spawn(path, [path, str(busy_us)], {})] = path
            started.value = i + 1
        pid, status = os.wait()
        os.unlink(running.pop(pid))
        failed.value += status != 0


def fit_slope(xs, ys):
    n = len(xs)
    if n < 2:
        return 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    den = sum((x - mx) ** 2 for x in xs)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / den if den else 0.0


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--testdata", default=os.path.join(ROOT, "build", "testdata"))
    ap.add_argument("--count", type=int, default=100000, help="distinct binaries to run (default 100000)")
    ap.add_argument("--parallel", type=int, default=8)
    ap.add_argument("--busy-us", type=int, default=3000, help="each binary's busy time (default 3000)")
    ap.add_argument("--frequency", type=int, default=99)
    ap.add_argument("--sample-s", type=float, default=10)
    ap.add_argument("--minutes", type=float, default=0, help="stop starting binaries after this (0: never)")
    ap.add_argument("--warm-fraction", type=float, default=0.1)
    result_file.add_argument(ap, "soak_distinct_binaries")
    ap.add_argument("--from-log", help="write the result from a run's printed points (its agent hung at stop)")
    ap.add_argument("--run-command", help="with --from-log: the command of that run, recorded as the result's")
    a = ap.parse_args()
    if a.from_log:
        points = points_from_log(a.from_log)
        write_result(a, points, int(points[-1]["binaries"]), -1, -9, a.from_log)
        return
    out = tempfile.mkdtemp(prefix="ehprof-soak-distinct-")
    bins = tempfile.mkdtemp(prefix="ehprof-soak-bins-", dir="/dev/shm")
    cache = os.path.join(out, "table-cache")
    err_path = os.path.join(out, "agent.log")
    log = open(err_path, "w")
    agent = subprocess.Popen([a.ehprof, "agent", "-a", "-F", str(a.frequency), "--interval", "10", "--output-dir",
                              os.path.join(out, "profiles"), "--keep", "10", "--metrics-every", "60",
                              "--metrics-addr", "127.0.0.1:0", "--table-cache", cache],
                             stderr=log, stdout=subprocess.DEVNULL)
    port = None
    for _ in range(600):
        with open(err_path) as f:
            m = re.search(r"metrics at http://127\.0\.0\.1:(\d+)/metrics", f.read())
        if m:
            port = int(m.group(1))
            break
        time.sleep(0.1)
    if port is None or agent.poll() is not None:
        sys.exit(f"soak: the agent did not start; its log: {err_path}")
    time.sleep(5)  # its first tables and profiles
    start = time.monotonic()
    stop_at = start + a.minutes * 60 if a.minutes else float("inf")
    with open(os.path.join(a.testdata, "churn_child.stripped"), "rb") as f:
        image = f.read()
    started, failed = multiprocessing.Value("q", 0), multiprocessing.Value("q", 0)
    load = multiprocessing.Process(target=run_load, args=(image, bins, a.count, a.parallel, a.busy_us, stop_at,
                                                          started, failed))
    load.start()
    points = []
    try:
        while agent.poll() is None:
            load.join(a.sample_s)
            finished = not load.is_alive()
            fds, deleted = agent_fds(agent.pid)
            rss, cpu = rss_cpu(agent.pid)
            met = scrape(port)
            bpf = bpf_hash_entries(agent.pid)
            p = {"t_s": round(time.monotonic() - start, 1), "binaries": started.value, "fds": fds,
                 "fds_deleted": deleted, "rss_mb": round(rss, 1), "cpu_s": round(cpu, 2),
                 "kept_files": met.get("ehprof_kept_files", -1),
                 "remembered_processes": met.get("ehprof_remembered_processes", -1),
                 "tracked_processes": met.get("ehprof_tracked_processes", -1),
                 "table_files": met.get('ehprof_table_files{state="known"}', -1),
                 "bpf_procs": bpf.get("procs", -1), "bpf_file_tables": bpf.get("file_tables", -1),
                 "bpf_offcpu_tasks": bpf.get("offcpu_tasks", -1), "bpf_notified": bpf.get("notified", -1),
                 "bpf_tables": met.get('ehprof_bpf_map_entries{map="tables"}', -1),
                 "bpf_pages": met.get('ehprof_bpf_map_entries{map="pages"}', -1),
                 "table_cache_entries": len(os.listdir(cache)) if os.path.isdir(cache) else 0}
            points.append(p)
            print("soak: " + ", ".join(f"{k} {v}" for k, v in p.items()), flush=True)
            if finished:
                break
    finally:
        if load.is_alive():
            load.terminate()
        died = agent.poll()
        if died is None:
            agent.send_signal(signal.SIGTERM)
            try:
                agent.wait(timeout=120)
            except subprocess.TimeoutExpired:
                # Recorded (agent_exit -9): the series up to here still hold.
                print(f"soak: the agent did not stop within 120 s of SIGTERM; killed; its log: {err_path}")
                agent.kill()
                agent.wait()
        log.close()
        shutil.rmtree(bins, ignore_errors=True)
    if died is not None:
        sys.exit(f"soak: the agent ended by itself (status {died}); its log: {err_path}")
    write_result(a, points, started.value, failed.value, agent.returncode, out)


def points_from_log(path):
    """The points a run printed ("soak: t_s ..., binaries ..., ..."): its
    result written again from its output."""
    points = []
    with open(path) as f:
        for line in f:
            if line.startswith("soak: t_s "):
                points.append({k: float(v) for k, v in re.findall(r"(\w+) (-?[\d.]+)", line[6:])})
    return points


def write_result(a, points, started, failed, agent_exit, out):
    warm = [p for p in points if p["binaries"] >= a.warm_fraction * started]
    if len(warm) < 2:
        sys.exit("soak: too few points once warm")
    figures = {"count_asked": a.count, "binaries_run": started, "binaries_failed": failed,
               "parallel": a.parallel, "busy_us": a.busy_us, "frequency_hz": a.frequency,
               "minutes": round(points[-1]["t_s"] / 60, 1),
               "binaries_per_s": round(started / max(points[-1]["t_s"], 1), 1),
               "agent_exit": agent_exit}
    for key in SERIES:
        xs = [p["binaries"] for p in warm]
        ys = [p[key] for p in warm]
        figures[f"{key}_warm"] = ys[0]
        figures[f"{key}_end"] = ys[-1]
        figures[f"{key}_max"] = max(p[key] for p in points)
        figures[f"{key}_slope_per_10k"] = round(fit_slope(xs, ys) * 10000, 3)
        print(f"soak: {key}: warm {ys[0]}, end {ys[-1]}, max {figures[f'{key}_max']}, "
              f"slope {figures[f'{key}_slope_per_10k']} per 10k binaries")
    print(f"soak: {started} binaries in {figures['minutes']} min ({figures['binaries_per_s']}/s); "
          f"files in {out}")
    if not a.no_result:
        path = result_file.write("soak_distinct_binaries", figures, a.note, a.result)
        with open(path) as f:
            doc = json.load(f)
        doc["series"] = {key: [[p["binaries"], p["t_s"], p[key]] for p in points] for key in SERIES}
        doc["series_columns"] = ["binaries", "t_s", "value"]
        if a.from_log and a.run_command:
            doc["command"] = a.run_command
            doc["written_from_log"] = True
        with open(path + ".tmp", "w") as f:
            json.dump(doc, f, indent=1)
            f.write("\n")
        os.replace(path + ".tmp", path)


if __name__ == "__main__":
    main()
