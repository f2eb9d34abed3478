#!/usr/bin/env bash
# py-spy, the outside reference for Python frames (bench/python_vs_pyspy.py
# and the Python test): pinned from PyPI into a venv under /var/cache/ehprof
# (idempotent; prints the py-spy path).
set -euo pipefail
VENV=${EHPROF_PYSPY_VENV:-/var/cache/ehprof/venv-pyspy}
VERSION=0.4.3
mkdir -p "$(dirname "$VENV")"
exec 9>"$(dirname "$VENV")/pyspy-install.lock"
flock 9
if ! "$VENV/bin/py-spy" --version 2>/dev/null | grep -qx "py-spy $VERSION"; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "py-spy==$VERSION"
fi
echo "$VENV/bin/py-spy"
