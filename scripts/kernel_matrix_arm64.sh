#!/usr/bin/env bash
# The kernel matrix's arm64 guest (scripts/kernel_matrix/arm64.py --help):
# cross-builds ehprof for arm64 (scripts/build.sh --arch arm64, into
# --build-dir; ccache when present; nothing to do when it is built), then
# boots Debian 12's arm64 kernel under qemu-system-aarch64 (TCG) over a root
# of Debian's arm64 packages and profiles Debian 12's and 13's fio there
# with ehprof and with perf. Needs root, qemu-system-arm, mmdebstrap
# (scripts/install_deps.sh) and the arm64 deps (scripts/install_arm64_deps.sh).
#   bash scripts/kernel_matrix_arm64.sh [--check] [--build-dir DIR] [--out DIR] [arm64.py options]
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-arm64
args=()
while (($#)); do
  case "$1" in
    --build-dir) build=$2; shift 2 ;;
    *) args+=("$1"); shift ;;
  esac
done
if [[ $(id -u) != 0 ]]; then
  [[ ${CI:-} == true ]] && { echo "kernel_matrix_arm64: CI=true but not root: it must run"; exit 1; }
  echo "SKIPPED: the arm64 kernel matrix needs root (mmdebstrap, /var/cache/ehprof)"
  exit 77
fi
for tool in qemu-system-aarch64 mmdebstrap; do
  command -v "$tool" >/dev/null && continue
  [[ ${CI:-} == true ]] && { echo "kernel_matrix_arm64: CI=true but $tool is missing"; exit 1; }
  echo "SKIPPED: $tool is not installed (scripts/install_deps.sh)"
  exit 77
done
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
mkdir -p "$build"
echo "kernel_matrix_arm64: step: cross build into $build" >&2
EHPROF_BUILD_DIR="$build" nice bash scripts/build.sh --arch arm64 "${launcher[@]}" >"$build/cross-build.log" 2>&1 ||
  { tail -30 "$build/cross-build.log"; echo "kernel_matrix_arm64: the arm64 cross build failed ($build/cross-build.log)"; exit 1; }
exec python3 scripts/kernel_matrix/arm64.py --ehprof "$build/ehprof" --out "$build/kernels" "${args[@]}"
