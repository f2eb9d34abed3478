#!/usr/bin/env bash
# Installs what ehprof needs, builds it, and profiles a bundled workload:
# Debian's fio (stripped, -O2, no frame pointers) running a CPU-bound job,
# sampled at 999 Hz with user stacks unwound in the kernel from fio's CFI.
# Writes an interactive flame graph (ehprof-demo.svg) and the same profile
# as folded stacks (ehprof-demo.folded), from one recording.
# Installs only what building ehprof and the demo need (install_deps.sh
# --build) and builds only ehprof (no tests) in a new build directory;
# scripts/test.sh adds the rest. Prints the seconds each phase took.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${EHPROF_BUILD_DIR:-build}
t0=$EPOCHREALTIME
bash scripts/install_deps.sh --build
t1=$EPOCHREALTIME
if [[ -f $build_dir/CMakeCache.txt ]]; then
  bash scripts/build.sh
else
  # No debug info for ehprof itself: a third less compile time.
  bash scripts/build.sh -DEHPROF_TESTS=OFF -DCMAKE_BUILD_TYPE=Release
fi
t2=$EPOCHREALTIME
"$build_dir/ehprof" record -F 999 -q -o ehprof-demo.svg -o ehprof-demo.folded \
  -- fio testdata/workloads/fio-cpu.job >/dev/null
t3=$EPOCHREALTIME
echo "flame graph: $(pwd)/ehprof-demo.svg  (open it in a browser: click to zoom, Ctrl-F to search)"
echo "hottest stacks:"
# sed reads to the end: head would end sort with SIGPIPE, a failure under pipefail.
sort -t' ' -k2 -n -r ehprof-demo.folded | sed -n 1,5p | cut -c1-160
secs() { LC_ALL=C awk -v a="$1" -v b="$2" 'BEGIN { printf "%.0f", b - a }'; }
echo "demo.sh: flame graph after $(secs "$t0" "$t3") s: packages $(secs "$t0" "$t1") s," \
  "configure+build $(secs "$t1" "$t2") s, record $(secs "$t2" "$t3") s ($(nproc) CPUs)"
