"""The JDKs bench/jvm_vs_async_profiler.py runs testdata/JvmHot.java on,
and one run: the JVM with async-profiler loaded, ehprof and async-profiler
profiling it over the same seconds.

A JDK is a home on this machine, or Debian 13's openjdk-21 in a root that
scripts/debian_root.sh makes (its tarball cached under /var/cache/ehprof):
that JVM, its javac and its jcmd run chrooted there, with /proc and /dev
bound in; ehprof, outside, profiles it by its PID like any process.
Standard library only.
"""
import glob
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCE = os.path.join(ROOT, "testdata", "JvmHot.java")
HOST_JDKS = ("/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/temurin-25-jdk-amd64")


class Jdk:
    """A JDK home, seen from its root ("/" or a chroot), with JvmHot
    compiled by its own javac and async-profiler where its JVM sees it."""

    def __init__(self, home, tmp, so, chroot=None):
        self.home, self.chroot = home, chroot
        self.tmp = os.path.join(tmp, f"jdk-{os.path.basename(home)}")
        os.makedirs(self.host(self.tmp_in()), exist_ok=True)
        shutil.copy(SOURCE, self.host(self.tmp_in()))
        shutil.copy(so, self.host(self.tmp_in()))
        self.so = os.path.join(self.tmp_in(), os.path.basename(so))
        self.run("javac", "-d", self.tmp_in(), os.path.join(self.tmp_in(), "JvmHot.java"))
        version = self.run("java", "-version").splitlines()
        self.version = next((v for v in version if "Runtime Environment" in v), version[0])
        m = re.search(r'version "(\d+)', " ".join(version))
        self.label = f"jdk{m.group(1) if m else 'x'}"

    def tmp_in(self):
        """The run folder as the JVM sees it."""
        return "/tmp/ehprof-jvmhot" if self.chroot else self.tmp

    def host(self, path):
        """A path the JVM sees, as this script sees it."""
        return os.path.join(self.chroot, path.lstrip("/")) if self.chroot else path

    def cmd(self, tool, *args):
        argv = [os.path.join(self.home, "bin", tool), *args]
        return ["chroot", self.chroot, *argv] if self.chroot else argv

    def run(self, tool, *args):
        p = subprocess.run(self.cmd(tool, *args), capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(self.cmd(tool, *args))}: exit {p.returncode}: {p.stderr.strip()}")
        return p.stdout + p.stderr

    def close(self):
        if self.chroot:
            close_root(self.chroot)


def make_jdk21_root(tmp):
    """Debian 13's openjdk-21 in a fresh root, /proc and /dev bound."""
    return make_debian_root("trixie", "openjdk-21-jdk-headless", "ehprof-jdk21-root.", tmp)


def make_debian_root(codename, packages, prefix, tmp):
    """A fresh root of Debian CODENAME with PACKAGES (scripts/debian_root.sh,
    cached), /proc and /dev bound. The root is a folder of its own, not
    under tmp: only close_root removes it, once nothing is mounted there."""
    root = tempfile.mkdtemp(prefix=prefix)
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty, exist_ok=True)
    env = dict(os.environ, EHPROF_ROOT_PACKAGES=packages, EHPROF_ROOT_KEEP=root)
    try:
        subprocess.run(["bash", os.path.join(ROOT, "scripts", "debian_root.sh"), codename, empty, "true"],
                       env=env, check=True, timeout=1800)
        subprocess.run(["mount", "--bind", "/proc", os.path.join(root, "proc")], check=True)
        subprocess.run(["mount", "--rbind", "/dev", os.path.join(root, "dev")], check=True)
        subprocess.run(["mount", "--make-rslave", os.path.join(root, "dev")], check=True)
    except BaseException:
        close_root(root)
        raise
    return root


def close_root(root):
    for mount in ("proc", "dev"):
        subprocess.run(["umount", "-R", "-l", os.path.join(root, mount)], stderr=subprocess.DEVNULL)
    mounts = subprocess.run(["findmnt", "-rno", "TARGET"], capture_output=True, text=True).stdout.split()
    if any(m == root or m.startswith(root + "/") for m in mounts):
        print(f"jvm_runs: {root} still has mounts; left in place", file=sys.stderr)
        return
    subprocess.run(["rm", "-rf", "--one-file-system", root])


def find_jdks(homes, jdk21, tmp, so):
    """The JDKs to run: the homes given, else those of HOST_JDKS present;
    with jdk21, Debian 13's openjdk-21 too."""
    jdks = [Jdk(h, tmp, so) for h in (homes or [h for h in HOST_JDKS if os.path.isdir(h)])]
    if jdk21:
        root = make_jdk21_root(tmp)
        try:
            home = sorted(glob.glob(os.path.join(root, "usr/lib/jvm/java-21-openjdk-*")))[0]
            jdks.append(Jdk("/" + os.path.relpath(home, root), tmp, so, chroot=root))
        except Exception:
            close_root(root)
            raise
    labels = [j.label for j in jdks]
    for i, j in enumerate(jdks):
        if labels.count(j.label) > 1:
            j.label += f"_{i}"
    return jdks


def jcmd_agent(jdk, pid, options):
    """async-profiler's command, given to the running JVM through jcmd (in
    quotes: jcmd's own parser splits its arguments at commas)."""
    out = jdk.run("jcmd", str(pid), "JVMTI.agent_load", jdk.so, f'"{options}"')
    if "return code: 0" not in out.lower():
        raise RuntimeError(f"jcmd {pid} JVMTI.agent_load {options}: {out.strip()}")


def run_once(jdk, args, rep):
    """Runs JvmHot once under the profilers; returns {source: path} of the
    profiles: "asprof" and "ehprof" (folded), "ehprof_perf" (ehprof's
    perf-script, each sample with its CLOCK_MONOTONIC time), "jfr" (jfr
    print --json) unless args.no_jfr; and "window", async-profiler's
    (from when jcmd's start returned to when its stop did: jcmd runs the
    command at the end of its own JVM's start-up, so both land near their
    ends). ehprof runs from before that window to after it, JFR inside it.
    The JIT may still change the code in it (under load JDK 25's C2
    compiles JvmHot.dataLoop, matMul and sieve inlined, 11 s after the
    start), so ehprof is judged on its samples in the window alone."""
    paths = {"asprof": os.path.join(jdk.tmp_in(), f"asprof-{rep}.folded"),
             "ehprof": os.path.join(jdk.tmp_in(), f"ehprof-{rep}.folded"),
             "ehprof_perf": os.path.join(jdk.tmp_in(), f"ehprof-{rep}.perf")}
    if not args.no_jfr:
        paths["jfr"] = os.path.join(jdk.tmp_in(), f"jfr-{rep}.jfr")
    # Longer than the run needs (jcmd can take seconds on a loaded machine):
    # it is killed at the end.
    jvm = subprocess.Popen(jdk.cmd("java", f"-agentpath:{jdk.so}", "-cp", jdk.tmp_in(), "JvmHot",
                                   str(args.warmup + args.seconds + 300)),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    eh = None
    try:
        time.sleep(args.warmup)
        eh = subprocess.Popen([args.ehprof, "record", "-p", str(jvm.pid), "-F", str(args.hz),
                               "-o", jdk.host(paths["ehprof"]), "-o", jdk.host(paths["ehprof_perf"])],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(1.0)  # past ehprof's setup
        jcmd_agent(jdk, jvm.pid, f"start,event={args.asprof_event},threads")
        start = time.monotonic()
        if "jfr" in paths:
            jdk.run("jcmd", str(jvm.pid), "JFR.start", "name=ehprof", "settings=profile",
                    f"filename={paths['jfr']}")
        time.sleep(max(0.0, args.seconds - (time.monotonic() - start)))
        if "jfr" in paths:
            jdk.run("jcmd", str(jvm.pid), "JFR.stop", "name=ehprof")
        jcmd_agent(jdk, jvm.pid, f"stop,file={paths['asprof']},collapsed")
        window = (start, time.monotonic())
        eh.send_signal(signal.SIGINT)  # ends the recording; ehprof writes it
        eh_err = eh.communicate(timeout=120)[1]
        if eh.returncode != 0:
            raise RuntimeError(f"ehprof record -p {jvm.pid}: exit {eh.returncode}:\n{eh_err}")
    finally:
        for p in (eh, jvm):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    out = {k: jdk.host(v) for k, v in paths.items()}
    if "jfr" in out:
        out["jfr"] = jfr_json(jdk, paths["jfr"])
    if args.keep:
        os.makedirs(args.keep, exist_ok=True)
        for who, path in out.items():
            shutil.copy(path, os.path.join(args.keep, f"{jdk.label}-{rep}-{who}{os.path.splitext(path)[1]}"))
    out["window"] = window
    return out


def jfr_json(jdk, recording):
    """The recording's jdk.ExecutionSample events as `jfr print --json`
    prints them, in a file beside it (host path). With all the frames JFR
    records (64 by default): `jfr print` shows a stack's 5 leaf-most
    unless told, and a chain cut there matches no other profiler's."""
    path = jdk.host(recording) + ".json"
    with open(path, "w") as f:
        p = subprocess.run(jdk.cmd("jfr", "print", "--json", "--stack-depth", "64", "--events",
                                   "jdk.ExecutionSample", recording),
                           stdout=f, stderr=subprocess.PIPE, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"jfr print {recording}: exit {p.returncode}: {p.stderr.strip()}")
    return path
