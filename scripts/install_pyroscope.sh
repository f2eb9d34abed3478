#!/usr/bin/env bash
# Installs Grafana Pyroscope's single-binary server, the real store
# `ehprof agent --pyroscope` pushes to, for the tests: built from its Go
# module at a pinned version, once, into $EHPROF_PYROSCOPE_CACHE
# (/var/cache/ehprof/pyroscope-VERSION/pyroscope); later runs find it there.
#
# Its go.mod replaces github.com/grafana/pyroscope/api with ./api, a nested
# module the module zip leaves out, so `go install module@version` refuses:
# the module and the api release of the same days are downloaded from the Go
# module proxy, copied somewhere writable, the replace pointed at the api
# copy, and ./cmd/pyroscope built. Needs Go >= 1.22 (this machine kind has
# one in /usr/local/go; else bookworm-backports' golang-1.23).
set -euo pipefail
VERSION=v1.12.0      # 2025-01-15
API_VERSION=v1.1.0   # 2025-01-08: the api module as that release had it
CACHE=${EHPROF_PYROSCOPE_CACHE:-/var/cache/ehprof/pyroscope-$VERSION}
BIN=$CACHE/pyroscope
if [[ -x $BIN ]]; then
  echo "$BIN"
  exit 0
fi

source "$(dirname "$0")/go_module.sh"
go_module_env pyroscope
src=$(mod_dir "github.com/grafana/pyroscope@$VERSION")
api=$(mod_dir "github.com/grafana/pyroscope/api@$API_VERSION")
cp -r "$src" "$work/pyroscope"
cp -r "$api" "$work/api"
chmod -R u+w "$work/pyroscope" "$work/api"
cd "$work/pyroscope"
"$GO" mod edit -replace "github.com/grafana/pyroscope/api=$work/api"
rm -f go.work go.work.sum   # the workspace names modules the zip lacks
echo "install_pyroscope: building ./cmd/pyroscope $VERSION (several minutes, once)" >&2
mkdir -p "$CACHE"
GOMAXPROCS=${GOMAXPROCS:-2} nice -n 15 "$GO" build -trimpath -o "$BIN.tmp" ./cmd/pyroscope
mv "$BIN.tmp" "$BIN"
echo "$BIN"
