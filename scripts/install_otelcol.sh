#!/usr/bin/env bash
# Installs a minimal OpenTelemetry Collector, the real server `ehprof agent
# --otlp` exports to in the tests: scripts/otelcol/main.go (the OTLP
# receiver and contrib's file exporter, which writes what it received as
# OTLP JSON) built against one Collector release from the Go module proxy,
# once, into $EHPROF_OTELCOL_CACHE (/var/cache/ehprof/otelcol-VERSION/otelcol);
# later runs find it there. Profiles need --feature-gates=+service.profilesSupport.
#
# v0.165.0 (2026-11-06) is the newest release whose modules the proxy
# serves here; its stable modules carry the v1 line's number, v1.71.0, of
# the same release. Every collector module is pinned to one of the two
# (checked below), so the profiles schema is the one otlp_fields.h names.
set -euo pipefail
VERSION=v0.165.0         # collector and contrib modules
STABLE_VERSION=v1.71.0   # the same release's stable (v1) modules
CACHE=${EHPROF_OTELCOL_CACHE:-/var/cache/ehprof/otelcol-$VERSION}
BIN=$CACHE/otelcol
if [[ -x $BIN ]]; then
  echo "$BIN"
  exit 0
fi

source "$(dirname "$0")/go_module.sh"
go_module_env otelcol
mkdir -p "$work/src"
cp "$(dirname "$0")/otelcol/main.go" "$work/src/"
cd "$work/src"
"$GO" mod init ehprof.local/otelcol >/dev/null 2>&1
"$GO" get \
  "go.opentelemetry.io/collector/otelcol@$VERSION" \
  "go.opentelemetry.io/collector/receiver/otlpreceiver@$VERSION" \
  "go.opentelemetry.io/collector/service@$VERSION" \
  "github.com/open-telemetry/opentelemetry-collector-contrib/exporter/fileexporter@$VERSION" \
  "go.opentelemetry.io/collector/confmap/provider/fileprovider@$STABLE_VERSION" \
  "go.opentelemetry.io/collector/confmap/provider/yamlprovider@$STABLE_VERSION" >&2
# Nothing of the collector's own at another release (the contrib modules
# it needs too).
if "$GO" list -m all | awk -v a="$VERSION" -v b="$STABLE_VERSION" \
    '$1 ~ /^(go\.opentelemetry\.io\/collector|github\.com\/open-telemetry\/opentelemetry-collector-contrib)/ && $2 != a && $2 != b {print; bad=1} END {exit !bad}' >&2; then
  echo "install_otelcol: the modules above are not at $VERSION/$STABLE_VERSION" >&2
  exit 1
fi
echo "install_otelcol: building the collector $VERSION (several minutes, once)" >&2
mkdir -p "$CACHE"
GOMAXPROCS=${GOMAXPROCS:-2} nice -n 15 "$GO" build -trimpath -ldflags "-X main.version=$VERSION" \
  -o "$BIN.tmp" .
mv "$BIN.tmp" "$BIN"
echo "$BIN"
