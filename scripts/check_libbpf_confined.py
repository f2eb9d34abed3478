#!/usr/bin/env python3
"""Checks that libbpf stays inside agent/session/ (the BPF session).

Two checks, each failing with the file or library that breaks it:

1. Sources: no C or C++ file under the source dirs, outside agent/session/
   and the BPF programs (bpf/, but bpf/host/), includes a libbpf header
   (bpf/libbpf.h, bpf/bpf.h, bpf/btf.h, the generated profiler.skel.h) or
   calls a libbpf or BPF helper function (bpf_*(...), ring_buffer__*,
   perf_buffer__*, btf__*, libbpf_*, a skeleton's *_bpf__*). Comments and
   string literals do not count. bpf/host/ (the walk's C build, replayed
   anywhere) defines the BPF helpers the walk calls, so it may name them,
   but includes no libbpf header either. tests/*_priv_test.cc load BPF for
   real and look into the kernel's maps: exempt.

2. Link graph: the file cmake/link_graph.cmake writes (every library and
   what it links). No library outside ALLOWED links libbpf (bpf_skel,
   PkgConfig::LIBBPF, -lbpf) in its closure.

    scripts/check_libbpf_confined.py --source-dir DIR --link-graph FILE

Exit status 1 on any failure. Standard library only.
"""
import argparse
import os
import re
import sys

# Libraries that may link libbpf, and why.
ALLOWED = {
    "agent_session": "the BPF session: the one library that calls libbpf",
    "bpf_skel": "the generated skeleton, libbpf's user",
    "agent_cli": "the command line: starts the BPF session each subcommand needs",
    "agent": "the interface target of the whole command, for tests",
}

SOURCE_DIRS = ["agent", "base", "bpf", "elf", "unwind_tables", "symbolizer", "bench", "fuzz", "tests", "testdata"]
SOURCE_EXTS = (".c", ".cc", ".cpp", ".h", ".hpp")

LIBBPF_INCLUDE = re.compile(
    r'^[ \t]*#[ \t]*include[ \t]*[<"]([^>"]*(?:bpf/(?:libbpf|bpf|btf|libbpf_common|usdt\.bpf)\.h|\.skel\.h))[>"]',
    re.M)
LIBBPF_CALL = re.compile(
    r"\b(bpf_\w+|ring_buffer__\w+|user_ring_buffer__\w+|perf_buffer__\w+|btf__\w+|libbpf_\w+"
    r"|\w+_bpf__\w+)\s*\(")
LIBBPF_LINK = re.compile(r"^(bpf_skel|PkgConfig::LIBBPF|(-l)?bpf|.*/libbpf\.(so|a)(\.[0-9.]+)?)$")
# Comments and string or character literals, replaced by spaces (lines kept).
COMMENT_OR_STRING = re.compile(
    r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)


def blank(m):
    return re.sub(r"[^\n]", " ", m.group(0))


def source_exempt(rel):
    """(includes exempt, calls exempt) for a file, by its path from the root."""
    if rel.startswith("bpf/host/"):
        return False, True
    if rel.startswith(("agent/session/", "bpf/")):
        return True, True
    if rel.startswith("tests/") and rel.endswith("_priv_test.cc"):
        return True, True
    return False, False


def check_sources(root):
    errors = []
    for top in SOURCE_DIRS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if not name.endswith(SOURCE_EXTS):
                    continue
                path = os.path.join(dirpath, name)
                rel = os.path.relpath(path, root)
                includes_ok, calls_ok = source_exempt(rel)
                if includes_ok and calls_ok:
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    text = f.read()
                line_of = lambda pos: text.count("\n", 0, pos) + 1
                if not includes_ok:
                    for m in LIBBPF_INCLUDE.finditer(text):
                        errors.append(f"{rel}:{line_of(m.start())}: includes {m.group(1)} "
                                      "(libbpf belongs to agent/session/)")
                if not calls_ok:
                    code = COMMENT_OR_STRING.sub(blank, text)
                    for m in LIBBPF_CALL.finditer(code):
                        errors.append(f"{rel}:{line_of(m.start())}: calls {m.group(1)} "
                                      "(libbpf belongs to agent/session/: use its MapWriter or EventSource)")
    return errors


def read_graph(path):
    """name -> (type, [linked names]), both link properties together."""
    graph = {}
    with open(path) as f:
        for lineno, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line:
                continue
            parts = line.split("|")
            if len(parts) != 4:
                raise ValueError(f"{path}:{lineno}: not name|TYPE|LINK_LIBRARIES|INTERFACE_LINK_LIBRARIES")
            name, type_, link, iface = parts
            deps = []
            for item in (link + "," + iface).split(","):
                # A link item named from another directory carries a
                # "::@(directory id)" marker.
                item = re.sub(r"::@(\([^)]*\))?$", "", item.strip())
                if item:
                    deps.append(item)
            graph[name] = (type_, deps)
    return graph


def libbpf_path(graph, start):
    """The chain by which start links libbpf, or None."""
    seen = {start}
    stack = [(start, [start])]
    while stack:
        name, chain = stack.pop()
        for dep in graph.get(name, ("", []))[1]:
            if dep in seen:
                continue
            seen.add(dep)
            if LIBBPF_LINK.match(dep):
                return chain + [dep]
            stack.append((dep, chain + [dep]))
    return None


def check_graph(path):
    graph = read_graph(path)
    if "agent_session" not in graph or libbpf_path(graph, "agent_session") is None:
        return [f"{path}: agent_session missing or linking no libbpf: not the graph of this build"]
    errors = []
    for name in sorted(graph):
        if name in ALLOWED:
            continue
        chain = libbpf_path(graph, name)
        if chain:
            errors.append(f"library {name} links libbpf: {' -> '.join(chain)}")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--source-dir", required=True)
    ap.add_argument("--link-graph", required=True)
    args = ap.parse_args()
    errors = check_sources(args.source_dir) + check_graph(args.link_graph)
    for e in errors:
        print(f"check_libbpf_confined: {e}", file=sys.stderr)
    if errors:
        return 1
    graph = read_graph(args.link_graph)
    linking = sorted(n for n in graph if libbpf_path(graph, n))
    print(f"check_libbpf_confined: {len(graph)} libraries, libbpf linked by: {', '.join(linking)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
