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
# Each phase's wall-clock seconds, and the CPU seconds of the commands it ran
# (user + system, from the shell's `times`: on a shared machine the wall
# clock also counts others' work, the CPU seconds only ours).
marks=$(mktemp -d)
trap 'rm -rf "$marks"' EXIT
mark() {  # mark N: the time now; `times` as a builtin of this shell (no subshell) gives its children's CPU
  echo "${EPOCHREALTIME/,/.}" >"$marks/t$1"
  times >"$marks/c$1"
}
mark 0
bash scripts/install_deps.sh --build
mark 1
if [[ -f $build_dir/CMakeCache.txt ]]; then
  bash scripts/build.sh
else
  # ehprof alone, without debug info (a third less compile time), with
  # precompiled headers (cmake/pch.cmake); clang compiles C too (no gcc
  # needed). scripts/test.sh configures this directory afresh for the tests.
  bash scripts/build.sh -DEHPROF_TESTS=OFF -DEHPROF_PCH=ON -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_COMPILER=clang
fi
mark 2
"$build_dir/ehprof" record -F 999 -q -o ehprof-demo.svg -o ehprof-demo.folded \
  -- fio testdata/workloads/fio-cpu.job >/dev/null
mark 3
echo "flame graph: $(pwd)/ehprof-demo.svg  (open it in a browser: click to zoom, Ctrl-F to search)"
echo "hottest stacks:"
# sed reads to the end: head would end sort with SIGPIPE, a failure under pipefail.
sort -t' ' -k2 -n -r ehprof-demo.folded | sed -n 1,5p | cut -c1-160
# span A B: the wall-clock seconds from mark A to mark B; cpu A B: the CPU
# seconds (user + system) of the commands run between them.
span() { cat "$marks/t$1" "$marks/t$2" | LC_ALL=C awk 'NR == 1 { a = $1 } END { printf "%.0f", $1 - a }'; }
cpu() {
  # `times`' second line: the children's user and system time, as 1m2.345s
  LC_ALL=C awk 'FNR == 2 { split($1, u, "m"); split($2, s, "m"); c[++n] = u[1] * 60 + u[2] + s[1] * 60 + s[2] }
    END { printf "%.0f", c[2] - c[1] }' "$marks/c$1" "$marks/c$2"
}
echo "demo.sh: flame graph after $(span 0 3) s: packages $(span 0 1) s, configure+build $(span 1 2) s," \
  "record $(span 2 3) s; CPU seconds: $(cpu 0 1), $(cpu 1 2), $(cpu 2 3) ($(nproc) CPUs," \
  "load average $(cut -d' ' -f1-3 /proc/loadavg))"
