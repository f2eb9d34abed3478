#!/usr/bin/env python3
"""vmlinux.h for the arm64 BPF object, from the BTF of Debian's arm64
kernel: the Image in linux-image-<ver>-arm64 is not compressed and carries
the kernel's .BTF contents (the blob starting with the BTF magic 0xeb9f),
so no multi-hundred-MB -dbg package is needed. The blob is cut out by its
header's lengths and dumped with bpftool; cached per kernel version.

  vmlinux_h.py OUT.h [--suite bookworm] [--cache DIR]
"""
import argparse
import glob
import os
import shutil
import struct
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import debian_arm64  # noqa: E402

BTF_MAGIC = b"\x9f\xeb\x01\x00"  # little-endian 0xeb9f, version 1, flags 0


def btf_blob(image):
    i = image.find(BTF_MAGIC)
    while i >= 0:
        hdr_len, type_off, type_len, str_off, str_len = struct.unpack_from("<IIIII", image, i + 4)
        end = i + hdr_len + str_off + str_len
        # The kernel's blob: a 24-byte header, types then strings, a few MB.
        if hdr_len == 24 and type_off == 0 and str_off == type_len and 1 << 20 < end - i and \
                end <= len(image):
            return image[i:end]
        i = image.find(BTF_MAGIC, i + 1)
    raise SystemExit("no kernel BTF in the image")


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out")
    ap.add_argument("--suite", default="bookworm")
    ap.add_argument("--cache", default=debian_arm64.CACHE)
    a = ap.parse_args()
    apt = debian_arm64.Apt(a.suite, a.cache)
    apt.update()
    pkg = debian_arm64.image_package(apt)
    cached = os.path.join(apt.root, "vmlinux", pkg, "vmlinux.h")
    if not os.path.exists(cached):
        tree = apt.fetch(pkg)
        image = open(glob.glob(os.path.join(tree, "boot", "vmlinuz-*"))[0], "rb").read()
        os.makedirs(os.path.dirname(cached), exist_ok=True)
        btf = cached[:-2] + ".btf"
        with open(btf, "wb") as f:
            f.write(btf_blob(image))
        bpftool = shutil.which("bpftool") or "/usr/sbin/bpftool"
        with open(cached + ".tmp", "w") as f:
            subprocess.run([bpftool, "btf", "dump", "file", btf, "format", "c"], stdout=f, check=True)
        os.rename(cached + ".tmp", cached)
    shutil.copyfile(cached, a.out)
    print(f"{a.out}: from {pkg}'s BTF")


if __name__ == "__main__":
    sys.exit(main())
