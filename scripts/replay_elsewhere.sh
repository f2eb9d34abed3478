#!/usr/bin/env bash
# The replay tier on a machine whose Debian packages differ from the one that
# recorded testdata/captures/: a clean `git clone` of this repository's
# committed HEAD, built in a fresh Debian root (Debian 13 by default, made by
# scripts/debian_root.sh with mmdebstrap and cached under
# /var/cache/ehprof/roots) with only what replay needs
# (-DEHPROF_REPLAY_ONLY=ON: g++, CMake, absl, GoogleTest; no clang, libbpf,
# libelf or libdw), and its tests run (ctest: replay_test). The captures carry
# their tables and expected frames, so none of the captured files is needed.
#   scripts/replay_elsewhere.sh [CODENAME]      needs root (mmdebstrap, chroot)
#   scripts/replay_elsewhere.sh --arm64         the same clean clone cross-built
#     for arm64 (cmake/aarch64-linux-gnu.cmake; GoogleTest from libgtest-dev's
#     sources) and its tests run under qemu-user: x86-64 captures replayed
#     by an aarch64 build. Needs the arm64 multiarch absl
#     (scripts/install_arm64_deps.sh) and qemu-user, not root.
# EHPROF_REPLAY_REV=REV: that commit instead of HEAD. Prints the seconds
# taken; exit status: the tests'.
set -euo pipefail
codename=${1:-trixie}
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
rev=$(git -C "$repo" rev-parse "${EHPROF_REPLAY_REV:-HEAD}")
start=$(date +%s)
clone=$(mktemp -d /tmp/ehprof-replay-clone.XXXXXX)
trap 'rm -rf "$clone"' EXIT
git clone --quiet --no-local "$repo" "$clone"
git -C "$clone" -c advice.detachedHead=false checkout --quiet "$rev"
status=0
if [[ $codename == --arm64 ]]; then
  cmake -S "$clone" -B "$clone/build-arm64" -DEHPROF_REPLAY_ONLY=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_TOOLCHAIN_FILE="$clone/cmake/aarch64-linux-gnu.cmake" \
    -DCMAKE_CROSSCOMPILING_EMULATOR=qemu-aarch64 >"$clone/build.log"
  cmake --build "$clone/build-arm64" -j"$(nproc)" >>"$clone/build.log" 2>&1 || { tail -n 50 "$clone/build.log"; exit 1; }
  file -b "$clone/build-arm64/replay_test" | cut -d, -f1-2
  (cd "$clone/build-arm64" && ctest --output-on-failure) || status=$?
  echo "replay_elsewhere.sh: arm64 under qemu-user, commit ${rev:0:12}: exit status $status after $(( $(date +%s) - start )) s" >&2
  exit $status
fi
EHPROF_ROOT_PACKAGES=g++,cmake,make,libabsl-dev,libgtest-dev \
  bash "$here/debian_root.sh" "$codename" "$clone" sh -ec '
    echo "Debian $(cat /etc/debian_version), $(g++ --version | head -n1), $(uname -m)"
    cmake -S . -B /build -DEHPROF_REPLAY_ONLY=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_C_COMPILER=gcc -DCMAKE_CXX_COMPILER=g++ >/build.log
    cmake --build /build -j"$(nproc)" >>/build.log 2>&1 || { tail -n 50 /build.log; exit 1; }
    cd /build && ctest --output-on-failure' || status=$?
echo "replay_elsewhere.sh: $codename, commit ${rev:0:12}: exit status $status after $(( $(date +%s) - start )) s" >&2
exit $status
