#!/usr/bin/env python3
"""Debian's arm64 packages of Debian 12 (bookworm) and 13 (trixie) on any
host: a private apt configuration per suite (its own state, lists and
sources under the cache directory; the machine's apt configuration is
neither read for state nor changed), whose archive URI is taken from this
machine's own apt sources. Packages are downloaded once and unpacked with
dpkg-deb -x under the cache.

  debian_arm64.py corpus [--cache DIR]        # download + unpack the corpus, print its ELF files
  debian_arm64.py fetch SUITE PKG... [--cache DIR]   # unpack PKGs, print their trees
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
import debian_archive  # noqa: E402  (scripts/debian_archive.py: the machine's own archive)

CACHE = os.environ.get("EHPROF_CACHE", "/var/cache/ehprof")
SUITES = {"bookworm": "12", "trixie": "13"}
# The readelf-agreement corpus: fio, libc6, libstdc++6, python3's
# interpreter (python3-minimal depends on it) and libLLVM.
CORPUS = {
    "bookworm": ["fio", "libc6", "libstdc++6", "python3.11-minimal", "libllvm15"],
    "trixie": ["fio", "libc6", "libstdc++6", "python3.13-minimal", "libllvm19"],
}


class Apt:
    def __init__(self, suite, cache=CACHE, arch="arm64"):
        self.suite = suite
        self.root = os.path.join(cache, "apt-" + arch, suite)
        for d in ("lists/partial", "archives/partial", "debs", "x"):
            os.makedirs(os.path.join(self.root, d), exist_ok=True)
        sources = os.path.join(self.root, "sources.list")
        with open(sources, "w") as f:
            f.write(f"deb [arch={arch}] {debian_archive.archive_uri()} {suite} main\n")
        self.opts = [
            "-o", f"APT::Architecture={arch}", "-o", f"APT::Architectures::={arch}",
            "-o", f"Dir::State={self.root}", "-o", f"Dir::State::Lists={self.root}/lists",
            "-o", f"Dir::State::status={self.root}/status",
            "-o", f"Dir::Etc::SourceList={sources}", "-o", "Dir::Etc::SourceParts=/nonexistent",
            "-o", f"Dir::Cache={self.root}", "-o", "APT::Sandbox::User=root", "-q",
        ]
        open(os.path.join(self.root, "status"), "a").close()

    def run(self, tool, *args, cwd=None):
        r = subprocess.run([tool, *self.opts, *args], capture_output=True, text=True, cwd=cwd)
        if r.returncode != 0:
            raise RuntimeError(f"{tool} {' '.join(args)} failed: {r.stderr.strip()[-800:]}")
        return r.stdout

    def update(self, max_age_s=7 * 24 * 3600):
        stamp = os.path.join(self.root, "updated")
        if os.path.exists(stamp) and time.time() - os.path.getmtime(stamp) < max_age_s:
            return
        self.run("apt-get", "update")
        open(stamp, "w").close()

    def fetch(self, pkg):
        """Downloads (once) and unpacks pkg; returns its tree."""
        debs = os.path.join(self.root, "debs")
        have = [f for f in os.listdir(debs) if f.startswith(pkg + "_") and f.endswith(".deb")]
        if not have:
            self.update()
            self.run("apt-get", "download", pkg, cwd=debs)
            have = [f for f in os.listdir(debs) if f.startswith(pkg + "_") and f.endswith(".deb")]
        deb = sorted(have)[-1]
        tree = os.path.join(self.root, "x", deb[:-4])
        if not os.path.exists(os.path.join(tree, ".done")):
            subprocess.run(["rm", "-rf", tree], check=True)
            os.makedirs(tree)
            subprocess.run(["dpkg-deb", "-x", os.path.join(debs, deb), tree], check=True)
            open(os.path.join(tree, ".done"), "w").close()
        return tree


def image_package(apt):
    """The versioned kernel image package linux-image-arm64 depends on."""
    show = apt.run("apt-cache", "show", "linux-image-arm64")
    dep = next(l for l in show.splitlines() if l.startswith("Depends:"))
    return dep.split(":", 1)[1].split(",")[0].split("(")[0].strip()


def elf_files(tree):
    out = []
    for d, _, files in os.walk(tree):
        for f in files:
            p = os.path.join(d, f)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            with open(p, "rb") as fh:
                hdr = fh.read(20)
            # 64-bit little-endian aarch64 (e_machine 183), executable or shared object
            if hdr[:4] == b"\x7fELF" and hdr[4] == 2 and hdr[5] == 1 and \
                    int.from_bytes(hdr[18:20], "little") == 183 and \
                    int.from_bytes(hdr[16:18], "little") in (2, 3):
                out.append(p)
    return sorted(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["corpus", "fetch"])
    ap.add_argument("args", nargs="*")
    ap.add_argument("--cache", default=CACHE)
    a = ap.parse_args()
    if a.what == "corpus":
        for suite, pkgs in CORPUS.items():
            apt = Apt(suite, a.cache)
            for pkg in pkgs:
                tree = apt.fetch(pkg)
                for f in elf_files(tree):
                    print(f"{suite}\t{pkg}\t{f}")
    else:
        apt = Apt(a.args[0], a.cache)
        for pkg in a.args[1:]:
            print(apt.fetch(pkg))


if __name__ == "__main__":
    sys.exit(main())
