"""Bench results as data: bench/results/NAME.json, read by the figures check.

Each bench calls write(NAME, figures, note=...) once at its end. The file
records the machine (kind, kernel, CPU model, CPUs, memory, load average
before and after), the UTC date, the git commit (with "-dirty" when the
tree had changes), the command line and the figures, a flat {key: number}
map. Figures in README.md and docs/*.md carry a marker naming FILE/KEY right after the number
(see scripts/check_figures.py), so a figure changes only with its file.
Standard library only.
"""
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS = os.path.join(ROOT, "bench", "results")
_LOAD_AT_START = os.getloadavg()


def _sh(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT).stdout.strip()
    except OSError:
        return ""


def machine():
    cpu = ""
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    virt = _sh(["systemd-detect-virt", "--vm"]) or "none"
    container = _sh(["systemd-detect-virt", "--container"]) or "none"
    kernel = platform.release()
    if virt == "none" and "-fc-" in kernel:
        virt = "firecracker"  # its guests carry no DMI that systemd-detect-virt reads
    return {"kind": f"vm={virt} container={container}", "kernel": kernel, "cpu": cpu,
            "cpus": os.cpu_count(), "memory_gib": round(mem_kib / 2**20, 1),
            "loadavg_start": round(_LOAD_AT_START[0], 2),
            "loadavg_end": round(os.getloadavg()[0], 2)}


def commit():
    head = _sh(["git", "rev-parse", "--short=12", "HEAD"]) or "unknown"
    dirty = _sh(["git", "status", "--porcelain", "--untracked-files=no"])
    return head + ("-dirty" if dirty else "")


def command():
    """The command as run from the repository root."""
    argv = [os.path.relpath(os.path.abspath(sys.argv[0]), ROOT)] + sys.argv[1:]
    return "python3 " + " ".join(shlex.quote(a) for a in argv)


def write(name, figures, note="", path=None, extra=None):
    """Writes bench/results/NAME.json (or path) and says where; `extra`:
    more top-level fields (text such as a conclusion), beside the figures."""
    bad = {k: v for k, v in figures.items() if not isinstance(v, (int, float)) or isinstance(v, bool)}
    if bad:
        raise ValueError(f"result {name}: figures must be numbers: {bad}")
    doc = {"bench": name, "command": command(),
           "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "commit": commit(), "machine": machine(), "note": note,
           **(extra or {}), "figures": dict(sorted(figures.items()))}
    path = path or os.path.join(RESULTS, name + ".json")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    os.replace(path + ".tmp", path)
    print(f"result: {os.path.relpath(path)}", file=sys.stderr)
    return path


def add_argument(ap, name):
    """--result PATH (default bench/results/NAME.json) and --no-result."""
    ap.add_argument("--result", default=os.path.join(RESULTS, name + ".json"),
                    help="where to write the JSON result (default: %(default)s)")
    ap.add_argument("--no-result", action="store_true", help="do not write a result file")
    ap.add_argument("--note", default="", help="said in the result file (e.g. the machine was loaded)")
