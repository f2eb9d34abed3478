#!/usr/bin/env bash
# Installs what ehprof needs, from Debian's packages (Debian 12 and 13; the
# lists are in scripts/packages.sh).
#   install_deps.sh --build   building ehprof and running the demo (scripts/demo.sh)
#   install_deps.sh           that, and everything the tests and benchmarks need
#                             (scripts/test.sh): the packages, then the real
#                             Pyroscope (built from its Go module) and the pinned npm tools
# Idempotent: packages already present are skipped.
set -euo pipefail
here=$(dirname "$0")
source "$here/packages.sh"
build_only=false
[[ ${1:-} == --build ]] && build_only=true

missing() {
  local p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}

# shellcheck disable=SC2046  # package names are words
need=($(missing $(ehprof_packages build)))
if ! $build_only; then
  # The test set names packages after the release's clang: apt's lists must know it.
  tests=$(ehprof_packages test 2>/dev/null) || { apt-get update -qq; tests=$(ehprof_packages test); }
  # shellcheck disable=SC2046,SC2086
  need+=($(missing $tests))
fi
if ((${#need[@]})); then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
$build_only && exit 0
# The arm64 cross build and its check (tests/arm64_cross.sh: qemu-user runs
# the arm64 binary): arm64 multiarch -dev packages.
bash "$here/install_arm64_deps.sh"
# The real Grafana Pyroscope server the agent's tests push to (built once
# from its Go module, then cached).
bash "$here/install_pyroscope.sh" >/dev/null
# The OpenTelemetry Collector the agent's OTLP tests export to (built once
# from its Go modules, then cached).
bash "$here/install_otelcol.sh" >/dev/null
# Helm, whose lint and template check the chart under deploy/helm (built
# once from its Go module, then cached).
bash "$here/install_helm.sh" >/dev/null
# The npm packages the consumer and browser tests run (pinned).
bash "$here/install_npm_tools.sh"
# py-spy, the reference the Python frames are judged by (pinned).
bash "$here/install_pyspy.sh" >/dev/null
# async-profiler, the reference the Java frames are judged by (pinned, from
# Maven through mvn).
bash "$here/install_async_profiler.sh" >/dev/null
