#!/usr/bin/env bash
# Builds the OpenTelemetry eBPF profiler, a peer for bench/overhead.py only,
# at a pinned tag, into /var/cache/ehprof/otel-ebpf-profiler/ebpf-profiler.
#   bash scripts/install_otel_profiler.sh SRC
# SRC: a git checkout of github.com/open-telemetry/opentelemetry-ebpf-profiler.
# It has to come from somewhere: the Go module proxy does not serve
# go.opentelemetry.io/ebpf-profiler (404) and this machine type cannot reach
# github.com. The build's dependencies come from the Go module proxy.
#
# One local change, made here and said: rlimit.MaximizeMemlock returns
# success on EPERM. The profiler raises RLIMIT_MEMLOCK to infinity before
# loading, which needs CAP_SYS_RESOURCE; this VM's bounding set lacks it
# (memlock hard limit 8 MiB), and since Linux 5.11 BPF memory is charged to
# the memory cgroup and RLIMIT_MEMLOCK is not consulted, so the raise is not
# needed. Nothing else is touched.
set -euo pipefail
TAG=v0.0.202633
SRC=${1:?usage: install_otel_profiler.sh SRC (a checkout of opentelemetry-ebpf-profiler)}
OUT=${EHPROF_OTEL_CACHE:-/var/cache/ehprof/otel-ebpf-profiler}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
git clone -q "$SRC" "$work/src"
git -C "$work/src" checkout -q "$TAG"
python3 - "$work/src/rlimit/rlimit.go" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = """	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &tmpLimit, &oldLimit); err != nil {
		return nil, fmt.Errorf("failed to set temporary rlimit: %w", err)"""
new = """	if err := unix.Prlimit(0, unix.RLIMIT_MEMLOCK, &tmpLimit, &oldLimit); err != nil {
		if err == unix.EPERM { // ehprof's bench: memcg accounting, no CAP_SYS_RESOURCE
			return func() {}, nil
		}
		return nil, fmt.Errorf("failed to set temporary rlimit: %w", err)"""
assert old in s, "rlimit.go changed: check the pinned tag"
open(p, "w").write(s.replace(old, new))
PY
mkdir -p "$OUT"
export GOCACHE=${EHPROF_GOCACHE:-/var/cache/ehprof/gobuild}
(cd "$work/src" && go build -tags osusergo,netgo -o "$OUT/ebpf-profiler.tmp" .)
mv "$OUT/ebpf-profiler.tmp" "$OUT/ebpf-profiler"
echo "$TAG" > "$OUT/VERSION"
echo "installed $OUT/ebpf-profiler ($TAG, rlimit EPERM tolerated)"
