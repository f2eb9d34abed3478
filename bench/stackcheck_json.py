"""The outside judge of stacks, ../shared/eval/stackcheck.py (EHPROF_SHARED
overrides ../shared), run on a perf-script dump for its JSON figures."""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STACKCHECK = os.path.join(os.environ.get("EHPROF_SHARED", os.path.join(ROOT, "..", "shared")),
                          "eval", "stackcheck.py")


def require():
    if not os.path.exists(STACKCHECK):
        raise SystemExit(f"needs {STACKCHECK}")


def stackcheck(dump, comm=None):
    """stackcheck's figures (complete_pct, samples, ...) for the samples of
    `comm` (all when None); {} when it printed no JSON."""
    cmd = [sys.executable, STACKCHECK, "--json", dump] + (["--comm", comm] if comm else [])
    r = subprocess.run(cmd, capture_output=True, text=True)
    try:
        return json.loads(r.stdout)
    except json.JSONDecodeError:
        return {}
