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
#
# --ui: pyroscope-ui beside it, the same server with its web UI, which the
# module holds only as sources (public/app): built as Pyroscope's own
# frontend.Dockerfile does (yarn --frozen-lockfile, yarn build: webpack into
# public/build; yarn 1 pinned, from npm) and embedded with the build tag
# embedassets, as its release builds are. Slower (node modules, webpack);
# only scripts/pyroscope_screenshot.sh needs it.
set -euo pipefail
VERSION=v1.12.0      # 2025-01-15
API_VERSION=v1.1.0   # 2025-01-08: the api module as that release had it
YARN_VERSION=1.22.22
CACHE=${EHPROF_PYROSCOPE_CACHE:-/var/cache/ehprof/pyroscope-$VERSION}
UI=false
[[ ${1:-} == --ui ]] && UI=true
BIN=$CACHE/pyroscope
$UI && BIN=$CACHE/pyroscope-ui
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
tags=()
if $UI; then
  npm_dir=${EHPROF_NPM_CACHE:-/var/cache/ehprof/npm}
  yarn=$npm_dir/node_modules/.bin/yarn
  if [[ $("$yarn" --version 2>/dev/null) != "$YARN_VERSION" ]]; then
    mkdir -p "$npm_dir"
    (cd "$npm_dir" && npm install --silent --no-audit --no-fund --save-exact "yarn@$YARN_VERSION" >/dev/null)
  fi
  echo "install_pyroscope: building the web UI of $VERSION (node modules, webpack; once)" >&2
  # No install scripts: they fetch Cypress' browser and build node-canvas,
  # both for Pyroscope's own UI tests, not for the bundle.
  yarn_install() {
    CYPRESS_INSTALL_BINARY=0 YARN_CACHE_FOLDER=/var/cache/ehprof/yarn nice -n 15 "$yarn" install \
      --ignore-scripts --non-interactive --silent --network-timeout 600000 "$@" >&2
  }
  if ! yarn_install --frozen-lockfile; then
    # The lock's @grafana/flamegraph 11.4.0 is not on every registry (the
    # npm registry this machine kind reaches serves 11.3.1 of that line but
    # not 11.4.0): that one package a minor version back, the rest as
    # locked.
    echo "install_pyroscope: @grafana/flamegraph 11.4.0 unavailable; using 11.3.1" >&2
    sed -i 's/"@grafana\/flamegraph": "11.4.0"/"@grafana\/flamegraph": "11.3.1"/' package.json
    yarn_install
  fi
  nice -n 15 "$yarn" --silent build >&2
  tags=(-tags embedassets)
fi
echo "install_pyroscope: building ./cmd/pyroscope $VERSION (several minutes, once)" >&2
mkdir -p "$CACHE"
GOMAXPROCS=${GOMAXPROCS:-2} nice -n 15 "$GO" build -trimpath "${tags[@]}" -o "$BIN.tmp" ./cmd/pyroscope
mv "$BIN.tmp" "$BIN"
echo "$BIN"
