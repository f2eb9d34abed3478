"""The arm64 guest of the kernel matrix: Debian 12's arm64 kernel package
booted by qemu-system-aarch64 (TCG, `-machine virt -cpu max`: pointer
authentication on) over a root file system made of Debian's arm64 packages.

The root (made once per package set by mmdebstrap, cached under
/var/cache/ehprof/roots/arm64-KEY): Debian 12's arm64 packages of what the
guest runs (bash, coreutils, fio, linux-perf, busybox-static, ehprof's
shared libraries), and Debian 13's fio and perf with their libraries under
/opt/trixie, run through Debian 13's loader (guest_arm64.sh says why).
mmdebstrap's `extract` variant unpacks the packages and their dependencies
without running maintainer scripts, so no arm64 code runs on the host.
The guest mounts it read-only over 9p, the cross-built ehprof's directory
at /ehprof/bin and a writable results share at /ehprof/results."""
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "arm64"))
import debian_archive  # noqa: E402  (scripts/debian_archive.py)
import debian_arm64  # noqa: E402  (scripts/arm64/debian_arm64.py)
import guest_vm  # noqa: E402
import kernels  # noqa: E402

CACHE = debian_arm64.CACHE
# What the guest runs, by release. ehprof's libraries are those of
# scripts/install_arm64_deps.sh's -dev packages (the cross build links
# against Debian 12's).
PACKAGES = {
    "bookworm": ["bash", "coreutils", "grep", "busybox-static", "fio", "linux-perf",
                 "libbpf1", "libelf1", "libdw1", "libabsl20220623", "libcurl4",
                 "libmicrohttpd12", "zlib1g", "libzstd1", "liblzma5", "libstdc++6"],
    "trixie": ["fio", "linux-perf"],
}
# Where Debian 13's tree sits in the root, and its loader and libraries.
TRIXIE_DIR = "/opt/trixie"
MOUNT_POINTS = ["ehprof/bin", "ehprof/results"]
LAYOUT = 1  # bump when the root's layout (not its packages) changes


def _mmdebstrap(suite, target):
    archive, security = debian_archive.archive_uri(), debian_archive.security_uri()
    sources = [f"deb {archive} {suite} main"]
    if security:
        sources.append(f"deb {security} {suite}-security main")
    r = subprocess.run(["mmdebstrap", "--quiet", "--variant=extract", "--architectures=arm64",
                        "--include=" + ",".join(PACKAGES[suite]), suite, target, *sources],
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"mmdebstrap of the arm64 {suite} root into {target} failed: "
                           f"{r.stderr.strip()[-800:]}")


def root(cache=CACHE):
    """The arm64 root directory, made once per package set."""
    key = hashlib.sha256(json.dumps([PACKAGES, TRIXIE_DIR, LAYOUT]).encode()).hexdigest()[:12]
    path = os.path.join(cache, "roots", f"arm64-{key}")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one maker at a time; the others wait and reuse it
        if not os.path.exists(os.path.join(path, ".done")):
            _make_root(path)
    return path


def _make_root(path):
    part = path + ".part"
    shutil.rmtree(part, ignore_errors=True)
    print(f"kernel_matrix: making the arm64 root {path} (once, mmdebstrap)", file=sys.stderr, flush=True)
    _mmdebstrap("bookworm", part)
    os.makedirs(part + TRIXIE_DIR)
    _mmdebstrap("trixie", part + TRIXIE_DIR)
    for d in MOUNT_POINTS:
        os.makedirs(os.path.join(part, d), exist_ok=True)
    open(os.path.join(part, ".done"), "w").close()
    shutil.rmtree(path, ignore_errors=True)
    os.rename(part, path)


def kernel(cache=CACHE, suite="bookworm"):
    """A Debian release's arm64 kernel package (linux-image-arm64's), unpacked
    with its modules.dep: (package, version, kernel release, Image path, tree)."""
    apt = debian_arm64.Apt(suite, cache)
    apt.update()
    pkg = debian_arm64.image_package(apt)
    tree = apt.fetch(pkg)
    # Debian 13's package has merged /usr (usr/lib/modules); the initramfs
    # reads lib/modules.
    if kernels.modules_dir(tree).startswith(os.path.join(tree, "usr")) and \
            not os.path.exists(os.path.join(tree, "lib", "modules")):
        os.makedirs(os.path.join(tree, "lib"), exist_ok=True)
        os.symlink("../usr/lib/modules", os.path.join(tree, "lib", "modules"))
    kver, image = kernels.kernel_files(tree)
    if not os.path.exists(os.path.join(tree, "lib", "modules", kver, "modules.dep")):
        subprocess.run(["depmod", "-b", tree, kver], check=True)
    version = os.path.basename(tree).split("_")[1]
    return pkg, version, kver, image, tree


def initramfs(tree, kver, rootdir, out_path):
    """busybox (Debian 12's arm64 busybox-static, from the root), init_arm64.sh
    as /init, and the kernel's own virtio-pci/9p modules."""
    kernels.build_initramfs(tree, kver, os.path.join(HERE, "init_arm64.sh"), out_path,
                            busybox=os.path.join(rootdir, "bin", "busybox"))
    return out_path


def boot(image, initrd, rootdir, bindir, results, env, timeout_s, smp=2, mem_mb=2048,
         boot_deadline_s=300):
    """Runs the guest (guest_vm.run_qemu): returns (qemu's status, seconds,
    None/"boot"/"run")."""
    cmdline = " ".join(["console=ttyAMA0", "panic=-1", "loglevel=4", "rdinit=/init"] +
                       [f"{k}={v}" for k, v in env.items()])
    share = "security_model=none,multidevs=remap"
    cmd = [
        "qemu-system-aarch64", "-machine", "virt", "-cpu", "max", "-accel", "tcg,thread=multi",
        "-smp", str(smp), "-m", str(mem_mb),
        "-display", "none", "-monitor", "none", "-serial", f"file:{os.path.join(results, 'console.log')}",
        "-no-reboot", "-net", "none",
        "-kernel", image, "-initrd", initrd, "-append", cmdline,
        "-virtfs", f"local,path={rootdir},mount_tag=hostroot,readonly=on,{share}",
        "-virtfs", f"local,path={bindir},mount_tag=bin,readonly=on,{share}",
        "-virtfs", f"local,path={results},mount_tag=results,{share}",
    ]
    return guest_vm.run_qemu(cmd, results, timeout_s, boot_deadline_s)


def host_view(dump, rootdir, out):
    """A perf-script dump with each DSO path the guest wrote (its root's)
    made the host's path of the same file under rootdir, for stackcheck."""
    with open(dump, errors="replace") as f, open(out, "w") as o:
        for line in f:
            i = line.rfind("(/")
            if i >= 0 and line.rstrip().endswith(")"):
                line = line[:i + 1] + rootdir + line[i + 1:]
            o.write(line)
    return out
