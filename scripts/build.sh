#!/usr/bin/env bash
# Configures and builds ehprof into build/ (or $EHPROF_BUILD_DIR).
# C++ with clang (the BPF programs and libFuzzer need it anyway); the C test
# programs in testdata/ with gcc, like the distro binaries they stand for.
# Arguments are CMake options (-DEHPROF_TESTS=OFF, ...): they configure a new
# build directory, or change an existing one's.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${EHPROF_BUILD_DIR:-build}
if [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  CC=gcc CXX=clang++ cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
elif (($#)); then
  cmake -S . -B "$BUILD_DIR" "$@"
fi
cmake --build "$BUILD_DIR" -j"$(nproc)"
