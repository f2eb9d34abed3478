#!/usr/bin/env bash
# Installs the dependencies, builds everything (with clang, and again with
# g++ to keep both compilers building it) and runs every test (ctest):
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
cd "${EHPROF_BUILD_DIR:-build}"
ctest --output-on-failure -j"$(nproc)" "$@"
