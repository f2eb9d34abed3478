#!/usr/bin/env bash
# Installs everything ehprof needs to build, test and benchmark, from Debian's packages.
# Idempotent: packages already present are skipped by apt-get.
set -euo pipefail
PKGS=(
  build-essential cmake pkg-config git python3
  libelf-dev libdw-dev elfutils binutils zlib1g-dev libzstd-dev liblzma-dev
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  clang llvm libclang-rt-14-dev libbpf-dev bpftool
  linux-perf fio libc6-dbg libllvm15 python3.11 libssl3 libgcrypt20 libstdc++6 gdb
  golang-go chromium fonts-dejavu-core debuginfod
  util-linux  # setpriv: the capability tests run ehprof as uid 65534 with chosen capabilities
  qemu-system-x86 busybox-static kmod  # the kernel matrix (scripts/kernel_matrix.sh)
  libcurl4-openssl-dev  # ehprof agent --pyroscope (HTTP, TLS)
  libmicrohttpd-dev  # ehprof agent --metrics-addr (Prometheus scrape endpoint)
  libcli11-dev  # the command line (options, generated help)
  systemd  # systemd-analyze verify of packaging/ehprof-agent.service
  libbpf-tools  # offcputime, the peer bench/offcpu_overhead.py runs beside ehprof --off-cpu
  systemtap-sdt-dev  # sys/sdt.h: the USDT probe in testdata/probe_calls.c
  bpftrace  # the peer bench/uprobe_stacks.py runs beside ehprof -e uprobe: (ustack by frame pointers)
  protobuf-compiler libprotobuf-dev golang-github-google-pprof-dev  # tests decode pprof with classes protoc generates from pprof's own profile.proto
)
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The real Grafana Pyroscope server the agent's tests push to (built once
# from its Go module, then cached).
bash "$(dirname "$0")/install_pyroscope.sh" >/dev/null
# The OpenTelemetry Collector the agent's OTLP tests export to (built once
# from its Go modules, then cached).
bash "$(dirname "$0")/install_otelcol.sh" >/dev/null
# The npm packages the consumer and browser tests run (pinned).
bash "$(dirname "$0")/install_npm_tools.sh"
