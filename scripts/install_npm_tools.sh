#!/usr/bin/env bash
# The npm packages the tests run as real consumers of ehprof's outputs,
# pinned, installed once under /var/cache/ehprof (idempotent):
#   npm/            flamegraph (reads perf-script), playwright-core (drives
#                   Debian's Chromium through the flame graph's UI and takes
#                   the docs' screenshots), terser (a real JavaScript
#                   program for bench/real_programs.py)
#   npm-speedscope/ speedscope (its importer, run in headless Chromium)
# Installed here, before the tests, so that tests running in parallel never
# install into the same folder at once; a lock covers runs of this script.
set -euo pipefail
NPM_DIR=${EHPROF_NPM_CACHE:-/var/cache/ehprof/npm}
SPEEDSCOPE_DIR=${EHPROF_SPEEDSCOPE_CACHE:-/var/cache/ehprof/npm-speedscope}
PACKAGES=(flamegraph@1.3.0 playwright-core@1.65.1 terser@5.44.0)
SPEEDSCOPE=speedscope@1.25.0
if ! command -v npm >/dev/null; then
  # Debian's; a machine with Node.js from elsewhere keeps its own.
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm
fi
mkdir -p "$NPM_DIR" "$SPEEDSCOPE_DIR"
exec 9>"$(dirname "$NPM_DIR")/npm-install.lock"
flock 9
installed() {  # DIR NAME@VERSION
  local name=${2%@*} version=${2##*@}
  grep -qs "\"version\": \"$version\"" "$1/node_modules/$name/package.json"
}
npm_install() {  # DIR PACKAGE...
  (cd "$1" && shift && npm install --silent --no-audit --no-fund "$@" >/dev/null)
}
missing=()
for p in "${PACKAGES[@]}"; do installed "$NPM_DIR" "$p" || missing+=("$p"); done
((${#missing[@]} == 0)) || npm_install "$NPM_DIR" "${missing[@]}"
installed "$SPEEDSCOPE_DIR" "$SPEEDSCOPE" || npm_install "$SPEEDSCOPE_DIR" "$SPEEDSCOPE"
