#!/usr/bin/env bash
# Installs what ehprof needs, builds it, and profiles a bundled workload:
# Debian's fio (stripped, -O2, no frame pointers) running a CPU-bound job,
# sampled at 999 Hz with user stacks unwound in the kernel from fio's CFI.
# Writes an interactive flame graph (ehprof-demo.svg) and the same profile
# as folded stacks (ehprof-demo.folded).
# Installs only what building ehprof and the demo need (install_deps.sh
# --build) and builds only ehprof (no tests) in a new build directory;
# scripts/test.sh adds the rest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh --build
if [[ -f ${EHPROF_BUILD_DIR:-build}/CMakeCache.txt ]]; then
  bash scripts/build.sh
else
  # No debug info for ehprof itself: a third less compile time.
  bash scripts/build.sh -DEHPROF_TESTS=OFF -DCMAKE_BUILD_TYPE=Release
fi
build/ehprof record -F 999 -q -o ehprof-demo.svg -- fio testdata/workloads/fio-cpu.job >/dev/null
build/ehprof record -F 999 -q -o ehprof-demo.folded -- fio testdata/workloads/fio-cpu.job >/dev/null
echo "flame graph: $(pwd)/ehprof-demo.svg  (open it in a browser: click to zoom, Ctrl-F to search)"
echo "hottest stacks:"
# sed reads to the end: head would end sort with SIGPIPE, a failure under pipefail.
sort -t' ' -k2 -n -r ehprof-demo.folded | sed -n 1,5p | cut -c1-160
