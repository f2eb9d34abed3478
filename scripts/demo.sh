#!/usr/bin/env bash
# Installs the dependencies, builds ehprof and shows what it does today:
# the unwind table of a bundled -O2, frame-pointer-less, stripped program
# (the in-kernel unwinder that uses these tables is the next step).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh
prog=build/testdata/plt_calls.stripped
echo "== ehprof tables --stats $prog"
build/ehprof tables --stats "$prog"
echo "== first rows of ehprof tables $prog"
build/ehprof tables "$prog" | head -25
echo "== ehprof tables --stats /usr/lib/x86_64-linux-gnu/libc.so.6"
build/ehprof tables --stats /usr/lib/x86_64-linux-gnu/libc.so.6
