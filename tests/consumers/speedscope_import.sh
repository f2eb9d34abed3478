#!/usr/bin/env bash
# ehprof's perf-script and folded outputs imported by speedscope itself:
# npm's `speedscope` (pinned; installed once under /var/cache/ehprof/npm-
# speedscope) ships only its browser build, with no importer node can call,
# so headless Chromium opens that build's index.html the way its own CLI
# does (#localProfilePath= a script calling speedscope.loadFileFromBase64)
# with the sandwich view, whose function table is DOM text. Both files come
# from one recording of deep_recursion (two -o); each must import (the
# profile named, not the landing page an unrecognized file leaves) with
# the recursion's functions in the table.
#   tests/consumers/speedscope_import.sh EHPROF TESTDATA_DIR
set -euo pipefail
EHPROF=$1 TD=$2
NPM_DIR=${EHPROF_SPEEDSCOPE_CACHE:-/var/cache/ehprof/npm-speedscope}
VERSION=1.25.0
HTML=$NPM_DIR/node_modules/speedscope/dist/release/index.html
if [[ ! -f $HTML ]] || ! grep -q "\"version\": \"$VERSION\"" "$NPM_DIR/node_modules/speedscope/package.json"; then
  command -v npm >/dev/null || { echo "npm is needed (apt-get install npm)"; exit 1; }
  mkdir -p "$NPM_DIR"
  (cd "$NPM_DIR" && npm install --silent --no-audit --no-fund "speedscope@$VERSION" >/dev/null)
fi
CHROMIUM=$(command -v chromium || true)
[[ -n $CHROMIUM ]] || { echo "chromium is needed (scripts/install_deps.sh installs it)"; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The DOM speedscope leaves after importing FILE, as text.
import_dom() {  # FILE
  local name
  name=$(basename "$1")
  # What speedscope's bin/cli.mjs writes for a file given on its command line.
  printf 'speedscope.loadFileFromBase64("%s", "%s")\n' "$name" "$(base64 -w0 "$1")" > "$work/$name.js"
  # An unrecognized file makes speedscope alert(), which blocks headless
  # Chromium until the timeout: no DOM, and the check below fails.
  timeout 60 "$CHROMIUM" --headless --no-sandbox --disable-gpu --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --disable-dev-shm-usage --user-data-dir="$work/profile" --allow-file-access-from-files \
    --virtual-time-budget=10000 --dump-dom \
    "file://$HTML#localProfilePath=$work/$name.js&view=sandwich" 2>"$work/chromium.err" |
    sed 's/<[^>]*>/\n/g' | sed 's/^[[:space:]]*//; s/[[:space:]]*$//; /^$/d'
}

check() {  # FILE EXPECTED_TITLE
  local dom
  dom=$(import_dom "$1") || dom="(Chromium failed or hung: $(tail -3 "$work/chromium.err"))"
  if grep -q "Drag and drop a profile" <<<"$dom" || ! grep -qx "$2 - speedscope" <<<"$dom"; then
    echo "speedscope did not import $(basename "$1") (wanted the title \"$2\"):"
    head -30 <<<"$dom"
    exit 1
  fi
  for f in recurse_leaf recurse main; do
    grep -qx "$f" <<<"$dom" || { echo "$(basename "$1"): no $f in speedscope's table"; head -60 <<<"$dom"; exit 1; }
  done
  echo "speedscope imported $(basename "$1") as \"$2\", recurse_leaf, recurse and main in its table"
}

# Every sample is deep_recursion's: the command's moments before its exec
# (named "ehprof") are left out, or speedscope would make them a profile
# of their own and show that first. User stacks only (-U): the sandwich
# table sorts by self time and the DOM holds its first rows only, so a
# handful of kernel functions (a sample in exec, a softirq) each with a
# sample of its own could push main (self 0) out of it.
"$EHPROF" record -U -F 499 -q -o "$work/p.perf-script" -o "$work/p.folded" \
  -- "$TD/deep_recursion" 0.5 6 2>"$work/err" || { cat "$work/err"; exit 1; }
tid=$(head -1 "$work/p.perf-script" | awk '{ print $2 }')
# speedscope names a perf profile by its first sample's comm and tid, a
# folded one by its file.
check "$work/p.perf-script" "deep_recursion tid: $tid"
check "$work/p.folded" "p.folded"
