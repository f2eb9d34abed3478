#!/usr/bin/env bash
# ehprof's perf-script output read by a real consumer: npm's `flamegraph`
# (pinned; installed once under /var/cache/ehprof/npm), whose input
# detector wants perf script's default header (comm, tid, [cpu], time,
# period, event). Records deep_recursion, converts, and checks the graph
# holds the recursion.
#   tests/consumers/perf_script_flamegraph.sh EHPROF TESTDATA_DIR
set -euo pipefail
EHPROF=$1 TD=$2
NPM_DIR=${EHPROF_NPM_CACHE:-/var/cache/ehprof/npm}
if [[ ! -x $NPM_DIR/node_modules/.bin/flamegraph ]]; then
  command -v npm >/dev/null || { echo "npm is needed (apt-get install npm)"; exit 1; }
  mkdir -p "$NPM_DIR"
  (cd "$NPM_DIR" && npm install --silent --no-audit --no-fund flamegraph@1.3.0 >/dev/null)
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$EHPROF" record -F 499 -q -o "$work/p.perf-script" -- "$TD/deep_recursion" 0.5 6 2>"$work/err"
head -1 "$work/p.perf-script"
"$NPM_DIR/node_modules/.bin/flamegraph" < "$work/p.perf-script" > "$work/fg.svg"
for f in recurse_leaf recurse main; do
  grep -q ">$f<\|\"$f\"\|$f (" "$work/fg.svg" || { echo "flamegraph output lacks $f"; exit 1; }
done
echo "npm flamegraph read it: $(grep -c '<rect' "$work/fg.svg") frames drawn"
