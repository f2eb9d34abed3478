#!/usr/bin/env bash
# Installs Helm, the real `helm lint` and `helm template` the chart under
# deploy/helm/ is checked with (tests/deploy_chart_test.sh): built from its
# Go module at a pinned version, once, into $EHPROF_HELM_CACHE
# (/var/cache/ehprof/helm-VERSION/helm); later runs find it there. Prints
# the binary's path.
#
# v3.22.0 is the newest helm.sh/helm/v3 the module proxy served here; the
# v3 line is the one charts with apiVersion v2 are written for and the one
# most clusters' tooling still runs. Helm's own version string is set as
# its Makefile sets it (internal/version), so `helm version` names it.
set -euo pipefail
VERSION=v3.22.0
CACHE=${EHPROF_HELM_CACHE:-/var/cache/ehprof/helm-$VERSION}
BIN=$CACHE/helm
if [[ -x $BIN ]]; then
  echo "$BIN"
  exit 0
fi

source "$(dirname "$0")/go_module.sh"
go_module_env helm
src=$(mod_dir "helm.sh/helm/v3@$VERSION")
cp -r "$src" "$work/helm"
chmod -R u+w "$work/helm"
cd "$work/helm"
echo "install_helm: building helm $VERSION (a few minutes, once)" >&2
mkdir -p "$CACHE"
GOMAXPROCS=${GOMAXPROCS:-2} CGO_ENABLED=0 nice -n 15 "$GO" build -trimpath \
  -ldflags "-X helm.sh/helm/v3/internal/version.version=$VERSION" -o "$BIN.tmp" ./cmd/helm
mv "$BIN.tmp" "$BIN"
echo "$BIN"
