#!/usr/bin/env bash
# Configures and builds ehprof into build/ (or $EHPROF_BUILD_DIR).
# C++ with clang (the BPF programs and libFuzzer need it anyway); the C test
# programs in testdata/ with gcc, like the distro binaries they stand for.
#   scripts/build.sh [--arch arm64] [CMAKE ARGS...]
# CMake arguments (-DEHPROF_TESTS=OFF, ...) configure a new build directory,
# or change an existing one's.
# --arch arm64 cross-compiles into build-arm64/ (cmake/aarch64-linux-gnu.cmake:
# clang --target=aarch64-linux-gnu against Debian's arm64 multiarch -dev
# packages, installed by scripts/install_arm64_deps.sh; the BPF object built
# for arm64 against Debian's arm64 kernel BTF); the program only, no tests.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/ccache_env.sh
arch=""
if [[ "${1:-}" == "--arch" ]]; then
  arch="$2"
  shift 2
fi
case "$arch" in
  "" | x86_64 | amd64)
    BUILD_DIR=${EHPROF_BUILD_DIR:-build}
    configure=(env CC=gcc CXX=clang++ cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo)
    # ccache when installed: a second build directory (a git worktree's)
    # or a rebuild after a branch switch compiles only what changed. C++
    # only: the C test programs keep their own build directory in their DWARF.
    if command -v ccache >/dev/null; then
      configure+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
    fi
    ;;
  arm64 | aarch64)
    BUILD_DIR=${EHPROF_BUILD_DIR:-build-arm64}
    configure=(cmake -S . -B "$BUILD_DIR" -DCMAKE_BUILD_TYPE=RelWithDebInfo
      -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake")
    ;;
  *)
    echo "scripts/build.sh: unknown --arch $arch (x86_64 or arm64)" >&2
    exit 2
    ;;
esac
# Tests asked of a build directory configured without them (scripts/demo.sh's:
# ehprof alone, clang for C, no debug info) configure it afresh, as CI's is:
# the C test programs are gcc's, ehprof has its debug info.
if [[ " $* " == *" -DEHPROF_TESTS=ON "* ]] && grep -qx 'EHPROF_TESTS:BOOL=OFF' "$BUILD_DIR/CMakeCache.txt" 2>/dev/null; then
  echo "scripts/build.sh: $BUILD_DIR was configured without tests: configuring it afresh" >&2
  "${configure[@]}" --fresh "$@"
elif [[ ! -f "$BUILD_DIR/CMakeCache.txt" ]]; then
  "${configure[@]}" "$@"
elif (($#)); then
  cmake -S . -B "$BUILD_DIR" "$@"
fi
cmake --build "$BUILD_DIR" -j"$(nproc)"
