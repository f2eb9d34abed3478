#!/usr/bin/env python3
"""The Java reference, run for real: bench/jvm_vs_async_profiler.py --quick
(one JDK, one run of testdata/JvmHot.java with async-profiler 4.1 and
`ehprof record -p` on it at once), then async-profiler's own profile
checked: it names all ten of JvmHot's hot methods in their threads, the
nine it can walk to as the deepest JvmHot frame of at least 2 % of their
thread's samples (JvmHot.fmodLoop, which mostly runs in libm's fmod where
async-profiler may lose the Java frames, anywhere in the stacks), and at
least 85 % of the three threads' samples carry a JvmHot frame. ehprof's
profile must hold samples of the three threads; its Java frames are not
judged here.
  jvm_reference_priv_test.py EHPROF
Needs root (ehprof record), a JDK (skips, exit 77, when none is installed)
and mvn (scripts/install_async_profiler.sh)."""
import glob
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "bench"))
import jvm_profiles  # noqa: E402
import jvm_runs  # noqa: E402


def check(ap, eh):
    errors = []
    for thread, methods in jvm_profiles.HOT.items():
        if eh.samples[thread] == 0:
            errors.append(f"ehprof has no sample of thread {thread}")
        for method in methods:
            share = ap.share(thread, method)
            anywhere = any(method in chain for (t, chain) in ap.chains if t == thread)
            ok = anywhere if method == "JvmHot.fmodLoop" else share >= 2.0
            print(f"async-profiler {thread:12} {method:22} deepest {share:5.1f} %"
                  f"{'' if ok else '  <- missing'}")
            if not ok:
                errors.append(f"async-profiler does not name {method} in {thread}")
    with_java = ap.pct(ap.with_java)
    print(f"async-profiler samples with a JvmHot frame: {with_java:.1f} %")
    if with_java < 85.0:
        errors.append(f"async-profiler: only {with_java:.1f} % of samples with a JvmHot frame")
    return errors


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    if not any(os.path.isdir(h) for h in jvm_runs.HOST_JDKS):
        print(f"skipped: no JDK installed ({', '.join(jvm_runs.HOST_JDKS)})")
        return 77
    with tempfile.TemporaryDirectory(prefix="ehprof-jvm-ref-test.") as keep:
        subprocess.run([sys.executable, os.path.join(ROOT, "bench", "jvm_vs_async_profiler.py"), "--quick",
                        "--no-result", "--ehprof", sys.argv[1], "--keep", keep], check=True, timeout=600)
        ap_path = glob.glob(os.path.join(keep, "*-0-asprof.folded"))
        eh_path = glob.glob(os.path.join(keep, "*-0-ehprof.folded"))
        if len(ap_path) != 1 or len(eh_path) != 1:
            print(f"FAIL: the bench kept {ap_path + eh_path}, not one profile of each")
            return 1
        errors = check(jvm_profiles.Profile(ap_path[0], "asprof"), jvm_profiles.Profile(eh_path[0], "ehprof"))
    for e in errors:
        print("FAIL:", e)
    print("1 passed, 0 failed" if not errors else "0 passed, 1 failed")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
