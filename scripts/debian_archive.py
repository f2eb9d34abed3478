#!/usr/bin/env python3
"""The machine's Debian archive URIs, read from its own apt sources, so a
user's mirror or proxy is respected and no archive host is written into the
repository.

  debian_archive.py             prints the main archive's URI
  debian_archive.py --security  prints the security archive's URI

From Python: archive_uri() and security_uri(). Both read the one-line
sources.list format and the deb822 *.sources files apt reads (the files
apt-config names: Dir::Etc::sourcelist and Dir::Etc::sourceparts), only
enabled "deb" entries of a Debian suite. A machine whose sources name no
security archive gets the main archive's sibling "<archive>-security" when the
main URI ends in /debian (the layout of Debian's mirrors)."""
import glob
import os
import re
import subprocess
import sys

# Debian suites by codename and by class; an entry for one of these (or with
# a -updates/-backports/-security suffix) is a Debian archive.
DEBIAN_SUITES = {
    "buster", "bullseye", "bookworm", "trixie", "forky", "duke", "sid",
    "oldoldstable", "oldstable", "stable", "testing", "unstable", "experimental",
}


def _apt_paths():
    """The sources.list file and the sources.list.d directory apt reads."""
    try:
        out = subprocess.run(["apt-config", "shell", "L", "Dir::Etc::sourcelist/f",
                              "P", "Dir::Etc::sourceparts/d"],
                             capture_output=True, text=True, check=True).stdout
        vals = dict(line.split("=", 1) for line in out.split() if "=" in line)
        return vals.get("L", "").strip("'"), vals.get("P", "").strip("'")
    except (OSError, subprocess.CalledProcessError):
        return "/etc/apt/sources.list", "/etc/apt/sources.list.d"


def _one_line_entries(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            # deb [option=value ...] URI SUITE COMPONENT...
            words = re.sub(r"\[[^]]*\]", " ", line.split("#", 1)[0]).split()
            if len(words) < 3 or words[0] != "deb":
                continue
            words = words[1:]
            if len(words) >= 2:
                yield words[0], words[1]


def _deb822_entries(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        stanzas = f.read().split("\n\n")
    for stanza in stanzas:
        fields, key = {}, None
        for line in stanza.splitlines():
            if line.startswith("#") or not line.strip():
                continue
            if line[0] in " \t" and key:
                fields[key] += " " + line.strip()
            elif ":" in line:
                key, value = line.split(":", 1)
                key = key.strip().lower()
                fields[key] = value.strip()
        if "deb" not in fields.get("types", "").split() or fields.get("enabled", "yes") == "no":
            continue
        for uri in fields.get("uris", "").split():
            for suite in fields.get("suites", "").split():
                yield uri, suite


def entries():
    """(uri, suite) of every enabled deb source of the machine, in apt's order."""
    source_list, parts = _apt_paths()
    if source_list and os.path.isfile(source_list):
        yield from _one_line_entries(source_list)
    for path in sorted(glob.glob(os.path.join(parts or "/etc/apt/sources.list.d", "*"))):
        if path.endswith(".list"):
            yield from _one_line_entries(path)
        elif path.endswith(".sources"):
            yield from _deb822_entries(path)


def _debian(suite):
    base = suite.split("/")[0].split("-")[0]
    return base in DEBIAN_SUITES


def _security(suite):
    return suite.endswith("-security") or suite.endswith("/updates")


def archive_uri():
    for uri, suite in entries():
        if _debian(suite) and not _security(suite):
            return uri.rstrip("/")
    raise RuntimeError("no Debian archive in this machine's apt sources "
                       "(/etc/apt/sources.list, /etc/apt/sources.list.d/*.list, *.sources)")


def security_uri():
    for uri, suite in entries():
        if _debian(suite) and _security(suite):
            return uri.rstrip("/")
    main = archive_uri()
    if main.endswith("/debian"):
        return main + "-security"
    raise RuntimeError("no Debian security archive in this machine's apt sources, and the "
                       f"main archive {main} does not end in /debian to find its sibling")


if __name__ == "__main__":
    try:
        print(security_uri() if sys.argv[1:] == ["--security"] else archive_uri())
    except RuntimeError as e:
        sys.exit(f"debian_archive.py: {e}")
