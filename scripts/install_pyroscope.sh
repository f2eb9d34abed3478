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

go_ok() { "$1" version 2>/dev/null | awk '{split($3, v, "."); exit !(v[1] == "go1" && v[2] >= 22)}'; }
GO=
for g in go /usr/local/go/bin/go /usr/lib/go-1.2[2-9]/bin/go; do
  if command -v "$g" >/dev/null && go_ok "$g"; then GO=$(command -v "$g"); break; fi
done
if [[ -z $GO ]]; then
  echo "install_pyroscope: no Go >= 1.22; installing golang-1.23 from bookworm-backports" >&2
  echo "deb http://deb.debian.org/debian bookworm-backports main" > /etc/apt/sources.list.d/ehprof-backports.list
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -t bookworm-backports golang-1.23-go
  GO=/usr/lib/go-1.23/bin/go
fi

work=$(mktemp -d /tmp/ehprof-pyroscope-build.XXXXXX)
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT
export GOPATH=$work/gopath GOMODCACHE=$work/gopath/pkg/mod GOFLAGS=-mod=mod GOTOOLCHAIN=auto
export GOCACHE=${EHPROF_GOCACHE:-/var/cache/ehprof/gobuild}
mod_dir() {
  "$GO" mod download -json "$1" | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d.get("Dir") or sys.exit(d.get("Error","no Dir")))'
}
src=$(mod_dir "github.com/grafana/pyroscope@$VERSION") || {
  echo "install_pyroscope: cannot download github.com/grafana/pyroscope@$VERSION from the Go module proxy" >&2; exit 1; }
api=$(mod_dir "github.com/grafana/pyroscope/api@$API_VERSION") || {
  echo "install_pyroscope: cannot download github.com/grafana/pyroscope/api@$API_VERSION" >&2; exit 1; }
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
