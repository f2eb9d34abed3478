#!/usr/bin/env bash
# systemd's exposure score of the agent's unit (systemd-analyze security
# --offline: the unit file alone, no running systemd needed; 0 is best, 10
# worst), before and after hardening: the unit at BASE (a git revision,
# default 6b98bcf: before issue 31) and the unit in the work tree.
# Writes bench/results/unit_security.json (the two scores and each
# check the hardened unit still fails, with its weight).
#   scripts/unit_security.sh [BASE]
# Needs systemd-analyze 252 or newer (apt-get install systemd).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base=${1:-6b98bcf}
work=$(mktemp -d /tmp/ehprof-unit-security.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir "$work/before" "$work/after"
git -C "$root" show "$base:packaging/ehprof-agent.service" >"$work/before/ehprof-agent.service"
cp "$root/packaging/ehprof-agent.service" "$work/after/ehprof-agent.service"
for side in before after; do
  # Exit status: non-zero past --threshold only (not given).
  timeout 120 systemd-analyze security --offline=true "$work/$side/ehprof-agent.service" \
    >"$work/$side.txt" 2>&1 || { cat "$work/$side.txt" >&2; exit 1; }
  timeout 120 systemd-analyze security --offline=true --json=short \
    "$work/$side/ehprof-agent.service" >"$work/$side.json"
done
python3 - "$root" "$base" "$work" <<'PY'
import datetime, json, os, platform, re, subprocess, sys
root, base, work = sys.argv[1:]

def overall(side):
    text = open(os.path.join(work, side + ".txt")).read()
    m = re.search(r"Overall exposure level for \S+: (\d+(?:\.\d+)?) (\S+)", text)
    if not m:
        sys.exit("unit_security.sh: no overall exposure level in systemd-analyze's output:\n" + text)
    return float(m.group(1)), m.group(2)

def failing(side):
    checks = json.load(open(os.path.join(work, side + ".json")))
    return sorted(({"check": c["name"], "exposure": float(c["exposure"]), "why": c["description"]}
                   for c in checks if c.get("exposure") not in (None, "0.0")),
                  key=lambda c: (-c["exposure"], c["check"]))

def git(*args):
    return subprocess.run(["git", "-C", root, *args], capture_output=True, text=True).stdout.strip()

before, before_word = overall("before")
after, after_word = overall("after")
version = subprocess.run(["systemd-analyze", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
dirty = "-dirty" if git("status", "--porcelain", "packaging/ehprof-agent.service") else ""
result = {
    "bench": "unit_security",
    "command": "bash scripts/unit_security.sh " + base,
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "commit": git("rev-parse", "--short=12", "HEAD") + dirty,
    "machine": {"systemd": version, "kernel": platform.release()},
    "note": "systemd-analyze security --offline=true packaging/ehprof-agent.service: exposure 0 (best) to 10; "
            "before: the unit at " + base,
    "figures": {"exposure_before": before, "exposure_after": after},
    "levels": {"before": before_word, "after": after_word},
    "failing_after": failing("after"),
    "failing_before": failing("before"),
}
out = os.path.join(root, "bench", "results", "unit_security.json")
with open(out, "w") as f:
    json.dump(result, f, indent=1)
    f.write("\n")
print(f"unit_security: exposure {before} {before_word} -> {after} {after_word} ({out})")
PY
