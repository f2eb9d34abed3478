"""Debian kernel packages for the kernel matrix: resolve, download, unpack,
and the initramfs that boots them (busybox + the package's own 9p/virtio
modules). Nothing is installed into this machine's /boot or /lib/modules:
packages are fetched with a private apt configuration and unpacked with
dpkg-deb -x under the cache directory."""
import gzip
import lzma
import os
import re
import shutil
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import debian_archive  # noqa: E402  (scripts/debian_archive.py)

# The Debian suites the matrix takes kernels from; the archive they come
# from is this machine's own (archive_uris), never a host written here.
SUITES = {
    "archive": ["bookworm", "bookworm-backports", "bullseye", "trixie", "trixie-backports"],
    "security": ["bookworm-security", "bullseye-security", "trixie-security"],
}


def archive_uris():
    """(archive, security) URIs of the Debian archive this machine's apt
    sources use (scripts/debian_archive.py)."""
    return debian_archive.archive_uri(), debian_archive.security_uri()


def sources():
    archive, security = archive_uris()
    rows = [(archive, s) for s in SUITES["archive"]]
    if security:
        rows += [(security, s) for s in SUITES["security"]]
    return rows


# The modules the guest needs to mount its root over 9p, with their
# dependencies added from modules.dep (virtio_pci is built in on 6.12).
GUEST_MODULES = ["virtio_pci", "9pnet_virtio", "9p"]


class Apt:
    """apt-get/apt-cache with their own state, lists and sources under root:
    the machine's apt configuration is neither read nor changed."""

    def __init__(self, root):
        self.root = root
        for d in ("lists/partial", "archives/partial", "debs"):
            os.makedirs(os.path.join(root, d), exist_ok=True)
        self.sources = os.path.join(root, "sources.list")
        with open(self.sources, "w") as f:
            for url, suite in sources():
                f.write(f"deb {url} {suite} main\n")
        self.opts = [
            "-o", f"Dir::State={root}", "-o", f"Dir::State::Lists={root}/lists",
            "-o", "Dir::State::status=/var/lib/dpkg/status",
            "-o", f"Dir::Etc::SourceList={self.sources}", "-o", "Dir::Etc::SourceParts=/nonexistent",
            "-o", f"Dir::Cache={root}", "-o", "APT::Sandbox::User=root", "-q",
        ]

    def run(self, tool, *args, cwd=None):
        r = subprocess.run([tool, *self.opts, *args], capture_output=True, text=True, cwd=cwd)
        if r.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed: {r.stderr.strip()[-800:]}")
        return r.stdout

    def update(self, max_age_s=12 * 3600):
        stamp = os.path.join(self.root, "updated")
        if os.path.exists(stamp) and time.time() - os.path.getmtime(stamp) < max_age_s:
            return
        self.run("apt-get", "update")
        open(stamp, "w").close()

    def resolve(self, line, suites):
        """The newest linux-image-amd64 of this kernel line (e.g. "6.1"; None:
        any) in these suites, and the versioned image package it depends on."""
        best = None
        for row in self.run("apt-cache", "madison", "linux-image-amd64").splitlines():
            parts = [p.strip() for p in row.split("|")]
            if len(parts) < 3 or (line and not parts[1].startswith(line + ".")):
                continue
            suite = parts[2].split()[1].split("/")[0]
            if suite not in suites:
                continue
            if best is None or subprocess.run(
                    ["dpkg", "--compare-versions", parts[1], "gt", best]).returncode == 0:
                best = parts[1]
        if best is None:
            raise RuntimeError(f"no linux-image-amd64 {line or 'at all'}.x in {', '.join(suites)}")
        for pkg in self.depends("linux-image-amd64", best):
            if pkg.startswith("linux-image-"):
                return pkg, best
        raise RuntimeError(f"linux-image-amd64={best} names no image package")

    def depends(self, pkg, version):
        """The package names pkg=version depends on, in order."""
        for row in self.run("apt-cache", "show", f"{pkg}={version}").splitlines():
            if row.startswith("Depends:"):
                return [d.split("(")[0].split("|")[0].strip() for d in row.split(":", 1)[1].split(",")]
        return []

    def _download(self, pkg, version):
        debs = os.path.join(self.root, "debs")
        deb = [f for f in os.listdir(debs) if f.startswith(pkg + "_") and f.endswith(".deb")]
        if not deb:
            self.run("apt-get", "download", f"{pkg}={version}", cwd=debs)
            deb = [f for f in os.listdir(debs) if f.startswith(pkg + "_") and f.endswith(".deb")]
        return os.path.join(debs, deb[0])

    def fetch(self, pkg, version):
        """Downloads (once) and unpacks pkg=version; returns the tree."""
        tree = os.path.join(self.root, "x", f"{pkg}_{version}")
        if os.path.exists(os.path.join(tree, ".done")):
            return tree
        shutil.rmtree(tree, ignore_errors=True)
        os.makedirs(tree)
        subprocess.run(["dpkg-deb", "-x", self._download(pkg, version), tree], check=True)
        if not os.path.isdir(modules_dir(tree)):
            # Newer packaging (7.x backports) keeps the kernel and its
            # modules in packages of their own, which the image depends on.
            for dep in self.depends(pkg, version):
                if dep.startswith(("linux-modules-", "linux-binary-")):
                    subprocess.run(["dpkg-deb", "-x", self._download(dep, version), tree], check=True)
        kver = os.listdir(modules_dir(tree))[0]
        # The package carries no modules.dep (its postinst makes it).
        if modules_dir(tree).startswith(os.path.join(tree, "usr")):
            os.makedirs(os.path.join(tree, "lib"), exist_ok=True)
            if not os.path.exists(os.path.join(tree, "lib", "modules")):
                os.symlink("../usr/lib/modules", os.path.join(tree, "lib", "modules"))
        subprocess.run(["depmod", "-b", tree, kver], check=True)
        open(os.path.join(tree, ".done"), "w").close()
        return tree


def modules_dir(tree):
    """lib/modules, or usr/lib/modules where the package has merged /usr."""
    for d in (os.path.join(tree, "lib", "modules"), os.path.join(tree, "usr", "lib", "modules")):
        if os.path.isdir(d):
            return d
    return os.path.join(tree, "lib", "modules")


def kernel_files(tree):
    kver = os.listdir(modules_dir(tree))[0]
    for path in (os.path.join(tree, "boot", f"vmlinuz-{kver}"),
                 os.path.join(tree, "usr", "lib", "modules", kver, "vmlinuz"),
                 os.path.join(tree, "usr", "lib", "linux", f"vmlinuz-{kver}")):
        if os.path.exists(path):
            return kver, path
    return kver, os.path.join(tree, "boot", f"vmlinuz-{kver}")


def module_load_order(tree, kver, wanted):
    """Paths of wanted modules and their dependencies, dependencies first;
    built-in ones are skipped."""
    mdir = os.path.join(tree, "lib", "modules", kver)
    deps = {}
    with open(os.path.join(mdir, "modules.dep")) as f:
        for line in f:
            path, _, rest = line.partition(":")
            deps[path] = rest.split()
    by_name = {}
    for path in deps:
        name = os.path.basename(path).split(".ko")[0].replace("-", "_")
        by_name[name] = path
    order, seen = [], set()

    def visit(path):
        if path in seen:
            return
        seen.add(path)
        for d in deps.get(path, []):
            visit(d)
        order.append(path)

    for name in wanted:
        if name.replace("-", "_") in by_name:
            visit(by_name[name.replace("-", "_")])
    return [os.path.join(mdir, p) for p in order]


def _cpio_newc(entries):
    """A newc cpio archive of (name, mode, data, rdev_major, rdev_minor)."""
    out = bytearray()
    ino = 1

    def pad4():
        while len(out) % 4:
            out.append(0)

    for name, mode, data, rmaj, rmin in entries + [("TRAILER!!!", 0, b"", 0, 0)]:
        nb = name.encode() + b"\0"
        hdr = "070701" + "".join(f"{v:08x}" for v in (
            ino, mode, 0, 0, 1, 0, len(data), 0, 0, rmaj, rmin, len(nb), 0))
        out += hdr.encode() + nb
        pad4()
        out += data
        pad4()
        ino += 1
    return bytes(out)


def _module_bytes(path):
    with open(path, "rb") as f:
        data = f.read()
    if path.endswith(".xz"):
        return lzma.decompress(data)
    if path.endswith(".zst"):
        return subprocess.run(["zstd", "-dc", path], capture_output=True, check=True).stdout
    if path.endswith(".gz"):
        return gzip.decompress(data)
    return data


def build_initramfs(tree, kver, init_script, out_path, busybox="/bin/busybox"):
    entries = []
    for d in ("bin", "dev", "proc", "sys", "newroot", "modules"):
        entries.append((d, stat.S_IFDIR | 0o755, b"", 0, 0))
    entries.append(("dev/console", stat.S_IFCHR | 0o600, b"", 5, 1))
    with open(busybox, "rb") as f:
        entries.append(("bin/busybox", stat.S_IFREG | 0o755, f.read(), 0, 0))
    entries.append(("bin/sh", stat.S_IFLNK | 0o777, b"busybox", 0, 0))
    with open(init_script, "rb") as f:
        entries.append(("init", stat.S_IFREG | 0o755, f.read(), 0, 0))
    # What every /init sources (init_common.sh, beside init_script).
    with open(os.path.join(os.path.dirname(init_script), "init_common.sh"), "rb") as f:
        entries.append(("init_common.sh", stat.S_IFREG | 0o644, f.read(), 0, 0))
    names = []
    for path in module_load_order(tree, kver, GUEST_MODULES):
        name = os.path.basename(path).split(".ko")[0] + ".ko"
        entries.append((f"modules/{name}", stat.S_IFREG | 0o644, _module_bytes(path), 0, 0))
        names.append(name)
    entries.append(("modules/order", stat.S_IFREG | 0o644, ("\n".join(names) + "\n").encode(), 0, 0))
    with open(out_path, "wb") as f:
        f.write(gzip.compress(_cpio_newc(entries), compresslevel=1))
    return names
