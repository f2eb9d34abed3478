#!/usr/bin/env bash
# Installs the dependencies, builds everything (with clang, and again with
# g++ to keep both compilers building it) and runs every test (ctest) on the
# clang build, then the unit tests on the g++ build:
# unit tests, readelf/libdw agreement, bounded fuzz runs, and the privileged
# tests (which need root with CAP_BPF and CAP_PERFMON).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
# Tests on, also in a build directory scripts/demo.sh configured without them.
bash scripts/build.sh -DEHPROF_TESTS=ON
# g++ builds every C++ target too (nothing run from it; ccache when present).
start=$SECONDS
bash scripts/build_gcc.sh
echo "g++ build: $((SECONDS - start)) s"
build_dir=${EHPROF_BUILD_DIR:-build}
# Go 1.24 and later build `go tool pprof` on its first use (a minute on a
# loaded machine): once here, into the Go cache a build directory's tests
# share (tests/test_support.cc: GoToolPprof), not by several tests at once.
warm_pprof() {
  command -v go >/dev/null || return 0
  GOCACHE="$(cd "$1" && pwd)/gocache" GOPROXY=off GOFLAGS= go tool pprof -h >/dev/null 2>&1 || true
}
warm_pprof "$build_dir"
ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" "$@"
# The unit tests once more, on the g++ build (its own ehprof, tables and
# symbolizer code): both compilers' builds pass them. The whole suite when
# no test selection was given.
if [[ $# -eq 0 ]]; then
  start=$SECONDS
  warm_pprof "${EHPROF_GCC_BUILD_DIR:-build-gcc}"
  ctest --test-dir "${EHPROF_GCC_BUILD_DIR:-build-gcc}" --output-on-failure -j"$(nproc)" -L unit
  echo "g++ build's unit tests: $((SECONDS - start)) s"
fi
