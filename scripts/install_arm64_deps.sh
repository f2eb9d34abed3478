#!/usr/bin/env bash
# What the arm64 cross build (scripts/build.sh --arch arm64) needs on a
# Debian x86-64 host: the arm64 architecture in dpkg, binutils for aarch64
# (the linker clang calls), and Debian's arm64 multiarch -dev packages of
# ehprof's libraries; and qemu-system-arm, which boots the arm64 guest of
# the kernel matrix (scripts/kernel_matrix_arm64.sh; its root is made with
# mmdebstrap, from scripts/packages.sh's test set). Idempotent.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  dpkg --add-architecture arm64
  apt-get update -qq
fi
PKGS=(
  binutils-aarch64-linux-gnu libc6-dev:arm64 libgcc-12-dev:arm64 libstdc++-12-dev:arm64
  libbpf-dev:arm64 libelf-dev:arm64 libdw-dev:arm64 libabsl-dev:arm64 zlib1g-dev:arm64
  libzstd-dev:arm64 liblzma-dev:arm64 libcurl4-openssl-dev:arm64 libmicrohttpd-dev:arm64
  qemu-system-arm
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
