#!/usr/bin/env python3
"""A real PHP program nobody here wrote, recorded as a new user would:
Debian 12's composer (2.5, its own package) writing an optimized class map
(`composer dump-autoload -o`) of the PHP libraries Debian installs under
/usr/share/php, ten times over, started by
  ehprof record -F 999 -- sh -c 'composer dump-autoload -o ...'
Of the samples running the VM (execute_ex on their stack) of the composer
processes, this prints and writes to bench/results/php_real_program.json:
  with_php     share with at least one PHP frame
  unnamed      share with a PHP frame ehprof could not name ([php: ...]
               stop markers, [php unknown])
  reach_start  share whose root is _start
and the five functions seen most often as the innermost user PHP frame.
Needs root and the test set's composer.
"""
import argparse
import collections
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perf_script  # noqa: E402
import real_programs  # noqa: E402
import result_file  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", default=os.path.join(ROOT, "build", "ehprof"))
    ap.add_argument("--runs", type=int, default=10)
    result_file.add_argument(ap, "php_real_program")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "composer.json"), "w") as f:
            f.write('{"autoload": {"classmap": ["/usr/share/php"]}}\n')
        out = os.path.join(tmp, "composer.perf")
        script = " && ".join(["composer dump-autoload -o --no-interaction -q"] * args.runs)
        perf_script.record(args.ehprof, out, ["sh", "-c", script], 999, cwd=tmp,
                           env=dict(os.environ, COMPOSER_HOME=os.path.join(tmp, "home")))
        recorded = list(perf_script.samples(out))
    vm = [f for comm, _, f in recorded if comm == "composer" and any(x.symbol == "execute_ex" for x in f)]
    php = [f for f in vm if any(perf_script.is_php(x.dso) for x in f)]
    unnamed = [f for f in vm if any(perf_script.is_php(x.dso) and real_programs.unnamed(x.symbol, x.dso) for x in f)]
    start = [f for f in vm if f and f[-1].symbol == "_start"]
    leaves = collections.Counter(next((x.symbol for x in f if x.dso.endswith(".php")), "(none)") for f in vm)
    n = max(len(vm), 1)
    figures = {"samples": len(vm), "with_php_pct": round(100.0 * len(php) / n, 2),
               "unnamed_pct": round(100.0 * len(unnamed) / n, 2), "reach_start_pct": round(100.0 * len(start) / n, 2)}
    print(f"composer dump-autoload -o x{args.runs}: {len(vm)} samples running the VM; with PHP frames "
          f"{figures['with_php_pct']} %, unnamed {figures['unnamed_pct']} %, reach _start {figures['reach_start_pct']} %")
    for name, count in leaves.most_common(5):
        print(f"    {100.0 * count / n:5.1f}%  {name}")
    if not args.no_result:
        result_file.write("php_real_program", figures, args.note, args.result)


if __name__ == "__main__":
    main()
