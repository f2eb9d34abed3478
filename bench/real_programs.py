#!/usr/bin/env python3
"""Real Java, JavaScript, Ruby and PHP programs nobody here wrote, recorded as a new user would.

  javac   Temurin 25's javac compiling java.util's sources (the 128 files of the package itself, from
          the JDK's own src.zip, --patch-module java.base), started by
          `ehprof record -- javac ...` with no JVM flag
  terser  terser (pinned by scripts/install_npm_tools.sh) minifying
          playwright-core's 3.6 MB coreBundle.js (compress and mangle)
          under node 20, started by `ehprof record -- node ...`, no flag
  rdoc    Debian 12's rdoc (Ruby 3.1) documenting RubyGems' and Bundler's own
          sources (/usr/lib/ruby/3.1.0/rubygems, bundler)
  phpcs   Debian 12's PHP_CodeSniffer (php-codesniffer, PHP 8.2) checking its
          own sources and Composer's against PSR-12

Per program, of the samples of its main thread (javac's Java main thread, node's
main thread), this prints and writes to
bench/results/real_programs.json:
  with_runtime  share with at least one frame of the program's runtime
  unnamed       share whose runtime frames include one that could not be
                named ([jvm: ...] other than stubs and the interpreter's own
                frames, [v8 unknown], a Ruby or PHP frame in brackets)
  reach_start   share whose root is _start or the thread start (clone3)
  complete      ehprof's own "user stacks complete" over all threads
and the five functions of the runtime seen most often as the deepest
named runtime frame (self shares; a JVM stub or V8 builtin below it, such
as a call into the VM, counts for the method that called it). Needs root, a built build/ehprof.
"""
import argparse
import collections
import os
import re
import shutil
import sys
import tempfile
import zipfile

import perf_script
import result_file

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TEMURIN = "/usr/lib/jvm/temurin-25-jdk-amd64"
NPM = os.environ.get("EHPROF_NPM_CACHE", "/var/cache/ehprof/npm")
BUNDLE = os.path.join(NPM, "node_modules", "playwright-core", "lib", "coreBundle.js")
TERSER = os.path.join(NPM, "node_modules", "terser", "bin", "terser")


def is_java(dso):
    return dso == "[java]"


def is_js(dso):
    return dso == "[v8]" or dso.endswith((".js", ".mjs", ".cjs")) or dso.startswith("node:")


def is_ruby(dso):
    return dso == "[ruby]" or dso.endswith(".rb") or dso.startswith("<internal:")


def unnamed(symbol, dso):
    if is_ruby(dso) or perf_script.is_php(dso):
        return symbol.startswith("[")
    if is_java(dso):
        return symbol.startswith("[jvm") and symbol not in ("[jvm: stub]", "[jvm: interpreter]")
    return symbol == "[v8 unknown]"


def judge(dump, comm, runtime):
    """Figures of the program's main thread: of its threads named comm, the
    one sampled most (node's workers share its comm; javac's Java main
    thread is not the process's first)."""
    per_tid = collections.Counter(t for c, t, f in perf_script.samples(dump) if c == comm and f)
    main_tid = per_tid.most_common(1)[0][0] if per_tid else -1
    total = with_rt = bad = start = 0
    self_counts = collections.Counter()
    for c, tid, frames in perf_script.samples(dump):
        if tid != main_tid or not frames:
            continue
        total += 1
        rt = [(f.symbol, f.dso) for f in frames if runtime(f.dso)]
        if rt:
            with_rt += 1
            named = [s for s, d in rt if not s.startswith("[")]
            if named:
                self_counts[named[0]] += 1
        if any(unnamed(s, d) for s, d in rt):
            bad += 1
        root = frames[-1].symbol
        if root in ("_start", "clone3", "clone", "start_thread") or (len(frames) > 1 and frames[-2].symbol == "start_thread"):
            start += 1
    pct = lambda n: round(100.0 * n / total, 1) if total else 0.0
    top = [(name, pct(n)) for name, n in self_counts.most_common(5)]
    return {"samples": total, "with_runtime_pct": pct(with_rt), "unnamed_pct": pct(bad),
            "reach_start_pct": pct(start)}, top


def record(ehprof, out, argv, cwd):
    return perf_script.complete_pct(perf_script.record(ehprof, out, argv, cwd=cwd))


def javac(ehprof, work):
    src_zip = os.path.join(TEMURIN, "lib", "src.zip")
    if not os.path.exists(src_zip):
        print(f"javac: {src_zip} not here, left out")
        return None
    with zipfile.ZipFile(src_zip) as z:
        z.extractall(os.path.join(work, "src"), [n for n in z.namelist()
                                                  if re.match(r"java\.base/java/util/[^/]+\.java$", n)])
    sources = sorted(os.path.join("src", "java.base", "java", "util", n)
                     for n in os.listdir(os.path.join(work, "src", "java.base", "java", "util")))
    os.makedirs(os.path.join(work, "out"))
    dump = os.path.join(work, "javac.perf-script")
    complete = record(ehprof, dump, [os.path.join(TEMURIN, "bin", "javac"), "--patch-module",
                                     "java.base=src/java.base", "-d", "out", "-nowarn", "-Xmaxerrs", "5",
                                     *sources], work)
    figures, top = judge(dump, "javac", is_java)
    figures["complete_pct"] = complete
    figures["sources"] = len(sources)
    return figures, top


def terser(ehprof, work):
    if not (os.path.exists(TERSER) and os.path.exists(BUNDLE)):
        sys.exit("real_programs.py: run scripts/install_npm_tools.sh first (terser, playwright-core)")
    dump = os.path.join(work, "terser.perf-script")
    complete = record(ehprof, dump, ["node", TERSER, BUNDLE, "-c", "-m", "-o",
                                     os.path.join(work, "min.js")], work)
    figures, top = judge(dump, "node", is_js)
    figures["complete_pct"] = complete
    return figures, top


def rdoc(ehprof, work):
    lib = "/usr/lib/ruby/3.1.0"
    if not shutil.which("rdoc3.1") or not os.path.isdir(os.path.join(lib, "rubygems")):
        print("rdoc: Debian 12's ruby3.1 not here, left out")
        return None
    dump = os.path.join(work, "rdoc.perf-script")
    complete = record(ehprof, dump, ["rdoc3.1", "-q", "-o", os.path.join(work, "doc"),
                                     os.path.join(lib, "rubygems"), os.path.join(lib, "bundler")], work)
    figures, top = judge(dump, "rdoc3.1", is_ruby)
    figures["complete_pct"] = complete
    return figures, top


def phpcs(ehprof, work):
    sources = ["/usr/share/php/PHP/CodeSniffer/src", "/usr/share/php/Composer"]
    if not shutil.which("phpcs") or not all(os.path.isdir(d) for d in sources):
        print("phpcs: Debian 12's php-codesniffer and composer not here, left out")
        return None
    dump = os.path.join(work, "phpcs.perf-script")
    # phpcs exits 2 when it finds violations: what it finds is not judged.
    complete = record(ehprof, dump, ["sh", "-c", 'phpcs --standard=PSR12 -q --report=summary "$@" >/dev/null; true',
                                     "phpcs", *sources], work)
    figures, top = judge(dump, "phpcs", perf_script.is_php)
    figures["complete_pct"] = complete
    return figures, top


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--keep", help="directory to keep the perf-script dumps in")
    ap.add_argument("--only", help="comma-separated programs to run (javac,terser,rdoc,phpcs)")
    result_file.add_argument(ap, "real_programs")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="ehprof-real.")
    os.makedirs(work, exist_ok=True)
    figures = {}
    try:
        for name, run in (("javac", javac), ("terser", terser), ("rdoc", rdoc), ("phpcs", phpcs)):
            if args.only and name not in args.only.split(","):
                continue
            os.makedirs(os.path.join(work, name), exist_ok=True)
            result = run(os.path.abspath(args.ehprof), os.path.join(work, name))
            if result is None:
                continue
            f, top = result
            print(f"{name}: {f['samples']} main-thread samples; with a runtime frame {f['with_runtime_pct']} %, "
                  f"one unnamed {f['unnamed_pct']} %, reaching the start {f['reach_start_pct']} %; "
                  f"complete (all threads) {f['complete_pct']} %")
            for fn, pct in top:
                print(f"  {pct:5.1f} %  {fn}")
            figures.update({f"{name}_{k}": v for k, v in f.items()})
            for i, (fn, pct) in enumerate(top[:3]):
                figures[f"{name}_top{i + 1}_pct"] = pct
        if not args.no_result and figures:
            result_file.write("real_programs", figures, args.note, args.result)
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
