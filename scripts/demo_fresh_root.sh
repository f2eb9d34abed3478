#!/usr/bin/env bash
# Times the newcomer's path: `bash scripts/demo.sh` from a clean clone of
# this repository's HEAD in a clean Debian root (scripts/debian_root.sh:
# mmdebstrap --variant=apt + systemd, nothing of ehprof's installed; the
# packages come from the machine's own Debian archive). Prints the seconds
# until the flame graph is written, each phase's seconds (packages,
# configure+build, record; wall clock and CPU), and the demo's hottest
# stacks, and writes them to bench/results/first_flame_graph_CODENAME.json
# (scripts/demo_result.py; docs/INSTALL.md's and the README's figures are
# checked against it).
#   demo_fresh_root.sh [CODENAME] [NOTE]   bookworm (Debian 12, default) or
#   trixie (13); NOTE goes into the result file (e.g. how loaded the machine was)
# Needs root.
set -euo pipefail
codename=${1:-bookworm}
note=${2:-}
here=$(cd "$(dirname "$0")" && pwd)
clone=$(mktemp -d /tmp/ehprof-clone.XXXXXX)
out=$(mktemp /tmp/ehprof-demo-output.XXXXXX)
trap 'rm -rf "$clone" "$out"' EXIT
git clone -q --no-local "$here/.." "$clone/ehprof"
bash "$here/debian_root.sh" "$codename" "$clone" bash -c '
  start=$(date +%s.%N)
  bash ehprof/scripts/demo.sh > demo.log 2>&1 || { tail -40 demo.log; exit 1; }
  end=$(date +%s.%N)
  tail -7 demo.log
  test -s ehprof/ehprof-demo.svg
  printf "Debian %s (%s) root: first flame graph after %.0f s (bash scripts/demo.sh from a clean clone, %s, %s CPUs)\n" \
    "$(cat /etc/debian_version)" "$1" "$(python3 -c "print($end - $start)")" \
    "$(date -u +%Y-%m-%d)" "$(nproc)"' sh "$codename" | tee "$out"
python3 "$here/demo_result.py" "$codename" --note "$note" < "$out"
