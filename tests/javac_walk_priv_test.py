#!/usr/bin/env python3
"""A real program nobody here wrote, walked: javac compiling a generated
source tree (classes full of lambdas, streams, generic inference, records,
sealed interfaces and calls between them: enough work for C1 and C2 to
compile much of javac while it runs) under `ehprof record`, with Debian's
JDK 17 and Temurin 25 where installed. javac's own thread ("javac") must
reach its start (start_thread or clone3) in at least MIN_TO_START % of its
samples, name at most MAX_UNKNOWN % of them "[jvm: unknown code]" (a pc in
the code cache with no code blob: a walk that read a wrong slot, or code
heaps read short), and no walk may stop at the depth limit.
  javac_walk_priv_test.py EHPROF
Needs root (ehprof record); skips (exit 77) when no JDK is installed."""
import os
import re
import subprocess
import sys
import tempfile

JDKS = ["/usr/lib/jvm/java-17-openjdk-amd64", "/usr/lib/jvm/temurin-25-jdk-amd64"]
CLASSES = 100
MIN_SAMPLES = 300
# Measured on both JDKs (2 CPUs, shared): 96-97 % to start, 0 % unknown.
MIN_TO_START = 92.0
MAX_UNKNOWN = 1.0
UNKNOWN = "[jvm: unknown code]"


def source(i, n):
    """Class C<i> of package gen.p<i % 10>, calling three others."""
    calls = "\n".join(
        f"        total += gen.p{j % 10}.C{j}.weigh(List.of(\"a{k}\", \"bb\", \"ccc\"), w -> w.length() + {k});"
        for k, j in enumerate((i * 7 + d) % n for d in (1, 2, 3)))
    return f"""package gen.p{i % 10};

import java.util.*;
import java.util.function.*;
import java.util.stream.*;

public class C{i}<T extends Comparable<? super T>> {{
    public sealed interface Shape permits Circle, Square, Poly {{}}
    public record Circle(double r) implements Shape {{}}
    public record Square(double side) implements Shape {{}}
    public record Poly(List<double[]> points, Map<String, Integer> tags) implements Shape {{}}

    private final List<T> items = new ArrayList<>();

    public static double area(Shape s) {{
        if (s instanceof Circle c) return Math.PI * c.r() * c.r();
        if (s instanceof Square q) return q.side() * q.side();
        Poly p = (Poly) s;
        return p.points().stream().mapToDouble(a -> a[0] * a[1]).sum() / 2.0;
    }}

    public <K, V extends Comparable<V>> Map<K, Optional<V>> maxBy(Collection<T> in, Function<? super T, K> key,
                                                                 Function<? super T, V> val) {{
        return in.stream().collect(Collectors.groupingBy(key, LinkedHashMap::new,
                Collectors.mapping(val, Collectors.maxBy(Comparator.naturalOrder()))));
    }}

    public static int weigh(List<String> words, ToIntFunction<String> f) {{
        return words.stream().filter(w -> !w.isEmpty()).mapToInt(f).reduce(0, Integer::sum);
    }}

    public Map<Boolean, List<String>> split(Stream<String> s, Predicate<String> p) {{
        return s.map(String::trim).sorted(Comparator.comparing(String::length).thenComparing(Function.identity()))
                .collect(Collectors.partitioningBy(p.or(x -> x.startsWith("{i}"))));
    }}

    public <R> List<R> each(BiFunction<Integer, T, R> f) {{
        List<R> out = new ArrayList<>();
        for (int k = 0; k < items.size(); k++) {{
            out.add(f.apply(k, items.get(k)));
        }}
        return out;
    }}

    public String describe(Object o) {{
        if (o instanceof Circle c && c.r() > {i % 7}) return "circle " + c;
        if (o instanceof Poly p) return p.tags().entrySet().stream()
                .map(e -> e.getKey() + "=" + e.getValue()).collect(Collectors.joining(",", "[", "]"));
        return String.valueOf(o);
    }}

    public static long run(int x) {{
        long total = x;
{calls}
        Supplier<Map<String, Set<Integer>>> sup = () -> new HashMap<>();
        Map<String, Set<Integer>> m = sup.get();
        IntStream.range(0, 10).boxed().forEach(v -> m.computeIfAbsent("k" + (v % 3), z -> new TreeSet<>()).add(v));
        total += m.values().stream().flatMap(Set::stream).mapToLong(Integer::longValue).sum();
        return total + area(new Circle(x)) > 0 ? total : -total;
    }}
}}
"""


def generate(root, n):
    paths = []
    for i in range(n):
        d = os.path.join(root, "gen", f"p{i % 10}")
        os.makedirs(d, exist_ok=True)
        paths.append(os.path.join(d, f"C{i}.java"))
        with open(paths[-1], "w") as f:
            f.write(source(i, n))
    return paths


def judge(folded, thread="javac"):
    """(samples, % reaching the start, % with an unknown-code frame) of thread."""
    total = to_start = unknown = 0
    with open(folded) as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            frames = stack.split(";")
            if frames[0] != thread or not count.isdigit():
                continue
            n = int(count)
            total += n
            if "start_thread" in frames or "clone3" in frames:
                to_start += n
            if UNKNOWN in frames:
                unknown += n
    pct = (lambda k: 100.0 * k / total) if total else (lambda k: 0.0)
    return total, pct(to_start), pct(unknown)


def run(ehprof, jdk, work):
    """The errors of one JDK's run, and prints what it measured."""
    sources = generate(os.path.join(work, "src"), CLASSES)
    out = os.path.join(work, "out")
    os.makedirs(out, exist_ok=True)
    folded = os.path.join(work, "javac.folded")
    cmd = [ehprof, "record", "-F", "499", "-o", folded, "--", f"{jdk}/bin/javac", "-d", out] + sources
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=240)
    if r.returncode != 0:
        return [f"{jdk}: ehprof record exited {r.returncode}: {r.stderr[-2000:]}"]
    stops = re.search(r"stop reasons: (.*)", r.stderr)
    total, to_start, unknown = judge(folded)
    print(f"{jdk}: javac {total} samples, to start {to_start:.1f} %, {UNKNOWN} {unknown:.1f} %; "
          f"stop reasons: {stops.group(1) if stops else '?'}")
    if not os.path.exists(os.path.join(out, "gen", "p0", "C0.class")):
        return [f"{jdk}: javac wrote no C0.class: the tree did not compile"]
    errors = []
    if total < MIN_SAMPLES:
        errors.append(f"{jdk}: only {total} samples of javac's thread (at least {MIN_SAMPLES} to judge)")
    if to_start < MIN_TO_START:
        errors.append(f"{jdk}: {to_start:.1f} % of javac's walks reach its start (at least {MIN_TO_START})")
    if unknown > MAX_UNKNOWN:
        errors.append(f"{jdk}: {unknown:.1f} % of javac's samples hold {UNKNOWN} (at most {MAX_UNKNOWN})")
    if not stops:
        errors.append(f"{jdk}: ehprof printed no stop reasons: {r.stderr[-2000:]}")
    elif "depth limit" in stops.group(1):
        errors.append(f"{jdk}: walks stopped at the depth limit: {stops.group(1)}")
    return errors


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    jdks = [j for j in JDKS if os.access(f"{j}/bin/javac", os.X_OK)]
    if not jdks:
        print(f"skipped: no JDK installed ({', '.join(JDKS)})")
        return 77
    failed = 0
    for jdk in jdks:
        with tempfile.TemporaryDirectory(prefix="ehprof-javac-walk.") as work:
            errors = run(sys.argv[1], jdk, work)
        print("\n".join(f"FAIL: {e}" for e in errors) or f"{jdk}: passed")
        failed += 1 if errors else 0
    print(f"{len(jdks) - failed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
