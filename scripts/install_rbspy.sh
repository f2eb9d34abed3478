#!/usr/bin/env bash
# rbspy, the outside reference for Ruby frames (bench/ruby_vs_rbspy.py and
# the Ruby test): pinned from crates.io, built with cargo into
# /var/cache/ehprof/rbspy-VERSION (idempotent, flock'd; prints the rbspy path).
set -euo pipefail
VERSION=0.55.0
ROOT=${EHPROF_RBSPY_ROOT:-/var/cache/ehprof/rbspy-$VERSION}
export PATH="$PATH:${CARGO_HOME:-$HOME/.cargo}/bin"
mkdir -p "$(dirname "$ROOT")"
exec 9>"$(dirname "$ROOT")/rbspy-install.lock"
flock 9
if ! "$ROOT/bin/rbspy" --version 2>/dev/null | grep -qx "rbspy $VERSION"; then
  cargo install --quiet --locked --version "$VERSION" --root "$ROOT" rbspy >&2
fi
echo "$ROOT/bin/rbspy"
