#!/usr/bin/env python3
"""The codebase's shape, measured: what docs/ARCHITECTURE.md's "Shape" table reports.

Reads a configured build directory through CMake's file API (the targets,
their sources and what each links, transitively) and the source tree:
  - libraries whose link closure holds libbpf (or the BPF skeleton);
  - ELF readers: product files that open an ELF with libelf (elf_begin or
    elf_memory);
  - table builds: product call sites that turn an ELF file into unwind rows;
  - test binaries: how many, and which of the project's libraries each links;
  - lines per library (its own .cc/.h/.c sources and the headers beside them);
  - the longest functions (scripts/function_lengths.py when the tree has it);
  - README lines.

usage: scripts/code_metrics.py [--rev REV] [--result NAME] [--json OUT]
Configures the tree (this checkout, or REV checked out in a temporary git
worktree) with its tests into a temporary build directory (configure only,
no compiling) and reads it there. --result writes bench/results/NAME.json,
whose figures docs/ARCHITECTURE.md's "Shape" table marks.
"""
import argparse
import datetime
import glob
import json
import os
import re
import subprocess
import sys
import tempfile

PRODUCT_DIRS = ("agent", "base", "bpf", "elf", "symbolizer", "unwind_tables")
# bpf_skel (an INTERFACE target, absent from the code model) links libbpf and
# depends on bpf_skeleton, which is there.
LIBBPF_TARGETS = ("bpf_skel", "bpf_skeleton")


def codemodel(build):
    query = os.path.join(build, ".cmake", "api", "v1", "query", "codemodel-v2")
    os.makedirs(os.path.dirname(query), exist_ok=True)
    open(query, "a").close()
    subprocess.run(["cmake", build], check=True, stdout=subprocess.DEVNULL)
    reply = os.path.join(build, ".cmake", "api", "v1", "reply")
    index = max(glob.glob(os.path.join(reply, "index-*.json")))
    with open(index) as f:
        cm_file = json.load(f)["reply"]["codemodel-v2"]["jsonFile"]
    with open(os.path.join(reply, cm_file)) as f:
        model = json.load(f)
    source_dir = model["paths"]["source"]
    targets = {}
    for ref in model["configurations"][0]["targets"]:
        with open(os.path.join(reply, ref["jsonFile"])) as f:
            t = json.load(f)
        targets[t["id"]] = t
    return source_dir, targets


def link_closure(targets):
    """name -> set of target names it depends on, transitively."""
    by_id = {i: t["name"] for i, t in targets.items()}
    direct = {t["name"]: {by_id[d["id"]] for d in t.get("dependencies", [])}
              for t in targets.values()}
    closure = {}

    def walk(name, seen):
        for d in direct.get(name, ()):
            if d not in seen:
                seen.add(d)
                walk(d, seen)
        return seen

    for name in direct:
        closure[name] = walk(name, set())
    return closure


def links_libbpf(t):
    frags = t.get("link", {}).get("commandFragments", [])
    return any(re.search(r"(^|/|-l)bpf(\.so|\.a|$)|libbpf", f["fragment"]) for f in frags)


def lines_of(paths):
    n = 0
    for p in paths:
        with open(p, errors="replace") as f:
            n += sum(1 for _ in f)
    return n


def product_files(src):
    for d in PRODUCT_DIRS:
        for root, _, files in os.walk(os.path.join(src, d)):
            for name in files:
                if name.endswith((".cc", ".c", ".h")):
                    yield os.path.join(root, name)


def grep_files(src, pattern):
    rx = re.compile(pattern)
    hits = []
    for p in product_files(src):
        with open(p, errors="replace") as f:
            for i, line in enumerate(f, 1):
                if rx.search(line) and not line.lstrip().startswith("//"):
                    hits.append(f"{os.path.relpath(p, src)}:{i}")
    return hits


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def configure(src, build):
    env = dict(os.environ, CC="gcc", CXX="clang++")
    r = subprocess.run(["cmake", "-S", src, "-B", build, "-DCMAKE_BUILD_TYPE=RelWithDebInfo",
                        "-DEHPROF_TESTS=ON"], env=env, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"code_metrics: cmake could not configure {src}:\n{r.stdout[-2000:]}{r.stderr[-2000:]}")


def function_lengths(src):
    """The 5 longest functions of src's product code, by scripts/function_lengths.py of this tree."""
    script = os.path.join(ROOT, "scripts", "function_lengths.py")
    if not os.path.exists(script):
        return []
    r = subprocess.run([sys.executable, script, "--root", src, "--top", "5"], capture_output=True, text=True)
    return r.stdout.strip().splitlines()


def measure(build):
    src, targets = codemodel(build)
    closure = link_closure(targets)
    libs = {t["name"]: t for t in targets.values() if t["type"] == "STATIC_LIBRARY"}
    ours = {n: t for n, t in libs.items()
            if any(s["path"].split("/")[0] in PRODUCT_DIRS for s in t.get("sources", []))
            and not n.endswith("_fuzz")}
    tests = {t["name"]: t for t in targets.values()
             if t["type"] == "EXECUTABLE" and t["name"].endswith("_test")}
    skel = set(LIBBPF_TARGETS)
    libbpf_libs = sorted(n for n in ours if links_libbpf(libs[n]) or closure[n] & skel)
    out = {"source": src}
    out["libraries"] = len(ours)
    out["libraries_linking_libbpf"] = libbpf_libs
    out["elf_readers"] = sorted({h.rsplit(":", 1)[0] for h in
                                 grep_files(src, r"\belf_(begin|memory)\s*\(")})
    # Call sites outside the library that defines the builders.
    out["table_builds"] = [h for h in grep_files(src, r"\b(BuildUnwindTable\w*|BuildCompactTable\w*)\s*\(")
                           if not h.startswith("unwind_tables/") and ".h:" not in h]
    lines = {}
    for n, t in sorted(ours.items()):
        dirs = {os.path.dirname(s["path"]) for s in t.get("sources", [])
                if not s["path"].startswith("/")}
        files = set()
        for d in dirs:
            for ext in ("*.cc", "*.c", "*.h"):
                files.update(glob.glob(os.path.join(src, d, ext)))
        lines[n] = lines_of(sorted(files))
    out["lines_per_library"] = lines
    # An executable's links are its link line (its build-order dependencies
    # also hold what it only runs, such as the ehprof binary).
    def linked(t):
        frags = [f["fragment"] for f in t.get("link", {}).get("commandFragments", [])]
        return sorted(n for n in ours if any(os.path.basename(f) == f"lib{n}.a" for f in frags))

    test_links = {n: linked(t) for n, t in sorted(tests.items())}
    out["test_binaries"] = len(tests)
    out["tests_linking_every_library"] = sum(1 for v in test_links.values() if set(v) >= set(ours))
    out["tests_linking_libbpf"] = sum(1 for n in tests if links_libbpf(tests[n]))
    out["test_links"] = test_links
    out["longest_functions"] = function_lengths(src)
    with open(os.path.join(src, "README.md")) as f:
        out["readme_lines"] = sum(1 for _ in f)
    return out


def figures(out):
    f = {
        "libraries": out["libraries"],
        "libraries_linking_libbpf": len(out["libraries_linking_libbpf"]),
        "elf_readers": len(out["elf_readers"]),
        "table_builds": len(out["table_builds"]),
        "test_binaries": out["test_binaries"],
        "tests_linking_every_library": out["tests_linking_every_library"],
        "tests_linking_libbpf": out["tests_linking_libbpf"],
        "readme_lines": out["readme_lines"],
        "product_lines": sum(out["lines_per_library"].values()),
    }
    for lib, n in out["lines_per_library"].items():
        f[f"lines_{lib}"] = n
    for i, line in enumerate(out["longest_functions"][:5]):
        m = re.match(r"\s*(\d+)", line)
        if m:
            f[f"longest_function_{i + 1}"] = int(m.group(1))
    return f


def git(*args, cwd=ROOT):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rev", help="measure this commit instead of the checkout")
    ap.add_argument("--result", help="write bench/results/NAME.json")
    ap.add_argument("--json", help="write everything measured here")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="code_metrics.") as tmp:
        src = ROOT
        if args.rev:
            src = os.path.join(tmp, "src")
            git("worktree", "add", "--detach", src, args.rev)
        try:
            build = os.path.join(tmp, "build")
            configure(src, build)
            out = measure(build)
            commit = git("rev-parse", "--short=12", "HEAD", cwd=src)
        finally:
            if args.rev:
                git("worktree", "remove", "--force", src)
    out["source"] = args.rev or "checkout"
    if args.result:
        result = {
            "bench": args.result,
            "command": " ".join(["python3 scripts/code_metrics.py"] +
                                (["--rev", args.rev] if args.rev else []) + ["--result", args.result]),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "commit": commit,
            "figures": figures(out),
            "libraries_linking_libbpf": out["libraries_linking_libbpf"],
            "elf_readers": out["elf_readers"],
            "table_builds": out["table_builds"],
            "longest_functions": out["longest_functions"],
        }
        with open(os.path.join(ROOT, "bench", "results", args.result + ".json"), "w") as f:
            json.dump(result, f, indent=1, sort_keys=True)
            f.write("\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1, sort_keys=True)
            f.write("\n")
    summary = {k: v for k, v in out.items() if k != "test_links"}
    print(json.dumps(summary, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
