#!/usr/bin/env python3
"""Writes a one-layer OCI image (an oci-archive: the OCI image layout as a
tar, what `podman load` and `skopeo copy oci-archive:` take) from a
directory, byte for byte the same for the same files and the same
SOURCE_DATE_EPOCH:

  oci_archive.py ROOT OUT.tar --entrypoint JSON [--env K=V]... [--tag NAME] [--arch ARCH]

Every tar (the layer and the archive) has its members sorted by name, owned
by 0:0 with no user or group names, dated SOURCE_DATE_EPOCH, in the ustar
format (no atime, ctime or PAX headers that carry the build's own time);
the layer is gzipped with no name and mtime 0. Prints the manifest's digest
(the image's, as `skopeo inspect` shows it) and the sizes. Standard library
only.
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import stat
import sys
import tarfile
import time


def epoch():
    value = os.environ.get("SOURCE_DATE_EPOCH")
    if value is None or not value.isdigit():
        sys.exit("oci_archive.py: SOURCE_DATE_EPOCH must be set to seconds since 1970")
    return int(value)


def layer_tar(root, mtime):
    """The root's files as an uncompressed tar, sorted, normalized."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        paths = []
        for dirpath, dirnames, filenames in os.walk(root):
            for name in dirnames + filenames:
                paths.append(os.path.relpath(os.path.join(dirpath, name), root))
        for rel in sorted(paths):
            full = os.path.join(root, rel)
            st = os.lstat(full)
            info = tarfile.TarInfo(rel)
            info.mtime = mtime
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.mode = stat.S_IMODE(st.st_mode)
            if stat.S_ISLNK(st.st_mode):
                info.type = tarfile.SYMTYPE
                info.linkname = os.readlink(full)
                tar.addfile(info)
            elif stat.S_ISDIR(st.st_mode):
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif stat.S_ISREG(st.st_mode):
                info.size = st.st_size
                with open(full, "rb") as f:
                    tar.addfile(info, f)
            else:
                sys.exit("oci_archive.py: %s is neither a file, a directory nor a link" % full)
    return out.getvalue()


def gzipped(data):
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as z:
        z.write(data)
    return out.getvalue()


def blob(blobs, data, media_type):
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root")
    ap.add_argument("out")
    ap.add_argument("--entrypoint", required=True, help="a JSON list")
    ap.add_argument("--env", action="append", default=[])
    ap.add_argument("--tag", default="latest")
    ap.add_argument("--arch", default="amd64", help="the image's architecture, as Debian and OCI name it")
    args = ap.parse_args()
    mtime = epoch()
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(mtime))
    raw = layer_tar(args.root, mtime)
    blobs = {}
    layer = blob(blobs, gzipped(raw), "application/vnd.oci.image.layer.v1.tar+gzip")
    config = {
        "architecture": args.arch,
        "os": "linux",
        "created": created,
        "config": {"Entrypoint": json.loads(args.entrypoint), "Env": args.env, "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest()]},
        "history": [{"created": created, "created_by": "scripts/build_image.sh"}],
    }
    config_desc = blob(blobs, canonical(config), "application/vnd.oci.image.config.v1+json")
    manifest = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                "config": config_desc, "layers": [layer]}
    manifest_desc = blob(blobs, canonical(manifest), "application/vnd.oci.image.manifest.v1+json")
    manifest_desc["annotations"] = {"org.opencontainers.image.ref.name": args.tag}
    index = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
             "manifests": [manifest_desc]}
    files = {"oci-layout": canonical({"imageLayoutVersion": "1.0.0"}), "index.json": canonical(index)}
    for digest, data in blobs.items():
        files["blobs/sha256/" + digest.split(":", 1)[1]] = data
    tmp = args.out + ".part"
    with tarfile.open(tmp, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name in ["blobs", "blobs/sha256"]:
            info = tarfile.TarInfo(name)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, mtime
            tar.addfile(info)
        for name in sorted(files):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(files[name]), 0o644, mtime
            tar.addfile(info, io.BytesIO(files[name]))
    os.replace(tmp, args.out)
    print("digest %s" % manifest_desc["digest"])
    print("layer %d bytes gzipped, %d bytes unpacked" % (layer["size"], len(raw)))


if __name__ == "__main__":
    main()
