#!/usr/bin/env bash
# Builds every C++ target with g++ (Debian's default compiler) into
# build-gcc/ (or $EHPROF_GCC_BUILD_DIR), as the conventional
# `cmake -S . -B build && cmake --build build` does, so code that only
# clang accepts fails CI. scripts/test.sh runs its unit tests after the
# whole suite on the clang build (scripts/build.sh). The libFuzzer targets need clang and
# are left out by fuzz/CMakeLists.txt. ccache is used when installed.
# Cost, measured 2026-11-26 from a cold ccache: 13.4 CPU-minutes (user+sys)
# for every target, about 7 minutes on 2 idle CPUs (101 min of wall time on
# this machine type while 8 other sessions loaded it).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ccache_env.sh
BUILD_DIR=${EHPROF_GCC_BUILD_DIR:-build-gcc}
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  launcher=()
  if command -v ccache >/dev/null; then
    # C++ only, as scripts/build.sh: the C test programs keep their own
    # build directory in their DWARF (scripts/ccache_env.sh).
    launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  fi
  CC=gcc CXX=g++ cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "${launcher[@]}" "$@"
fi
cmake --build "$BUILD_DIR" -j"$(nproc)"
