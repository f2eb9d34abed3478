#!/usr/bin/env bash
# The kernel matrix (scripts/kernel_matrix/matrix.py --help): boots Debian's
# kernel packages (12's stock 6.1, its 6.12 backport, 11's 5.10, 13's newest
# backport) under qemu
# with this machine's root shared read-only over 9p, and runs ehprof check
# and ehprof record of fio inside each. Needs root, qemu-system-x86,
# busybox-static and kmod (scripts/install_deps.sh) and a build.
#   bash scripts/kernel_matrix.sh [--check] [--kernels 6.1,6.12] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 scripts/kernel_matrix/matrix.py "$@"
