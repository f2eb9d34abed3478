#!/usr/bin/env bash
# docs/python-flamegraph.png: a flame graph of a Python program (testdata/
# python/mix.py under pyenv's 3.12, or the python given) recorded by ehprof,
# Python frames (teal, "Python" in the legend) among the native ones, opened
# in headless Chromium with a search for the sorted() key callback and
# screenshotted. Needs root (BPF), a built build/ehprof and chromium.
#   bash scripts/python_screenshot.sh [PYTHON]
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-/root/.pyenv/versions/3.12.1/bin/python3.12}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
build/ehprof record -F 999 -q -o "$work/py.svg" -- "$python" testdata/python/mix.py 4 >/dev/null
height=$(grep -o -m1 '<svg [^>]*height="[0-9.]*"' "$work/py.svg" | sed 's/.*height="\([0-9]*\).*/\1/')
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --disable-dev-shm-usage --user-data-dir="$work/profile" --hide-scrollbars \
  --virtual-time-budget=5000 --window-size="1400,$height" \
  --screenshot="docs/python-flamegraph.png" "file://$work/py.svg?s=%3Clambda%3E" 2>/dev/null
echo "docs/python-flamegraph.png: $python testdata/python/mix.py, search <lambda>"
