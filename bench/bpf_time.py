"""What the benches read from `ehprof record`'s summary on stderr: the BPF
time per sample (the sampler's own clock, median over the run's samples)
and the JVM metadata line. Standard library only."""
import re


def bpf_us(stderr):
    """The median BPF time per sample, in microseconds."""
    m = re.search(r"BPF time per sample: median ([0-9.]+) us", stderr)
    if not m:
        raise RuntimeError("no BPF time in ehprof's summary:\n" + stderr)
    return float(m.group(1))


def bpf_p10_us(stderr):
    """The BPF time per sample that a tenth of the run's samples take less
    than, in microseconds: the walk's own cost with little of the VM's
    noise (a sample only gains time from a busy host's cache misses,
    interrupts and stolen cycles)."""
    m = re.search(r"BPF time per sample: median [0-9.]+ us, p90 [0-9.]+ us, p99 [0-9.]+ us, p10 ([0-9.]+) us", stderr)
    if not m:
        raise RuntimeError("no BPF time p10 in ehprof's summary:\n" + stderr)
    return float(m.group(1))


def alternate(stderr):
    """With --alternate-interp-walks: {on, on_p10, off, off_p10} in
    microseconds, the median and p10 of the samples that walked the
    interpreters' frames and of those (every other one) that did not."""
    on = re.search(r"BPF time per sample: median ([0-9.]+) us, p90 [0-9.]+ us, p99 [0-9.]+ us, p10 ([0-9.]+) us",
                   stderr)
    off = re.search(r"the \d+ without them: median ([0-9.]+) us, p10 ([0-9.]+) us", stderr)
    if not on or not off:
        raise RuntimeError("no --alternate-interp-walks times in ehprof's summary:\n" + stderr)
    return {"on": float(on.group(1)), "on_p10": float(on.group(2)), "off": float(off.group(1)),
            "off_p10": float(off.group(2))}


def jvm_metadata(stderr):
    """{jvms, live_jvms, methods, total_kb, method_table_kb, line_tables_kb,
    method_caches_kb, scopes_kb} from the JVM metadata line, or {} (the
    caches are those of the JVMs still running at the end)."""
    m = re.search(r"JVM metadata: (\d+) JVMs \((\d+) running\), (\d+) methods named, ([0-9.]+) KB \(method table "
                  r"([0-9.]+) KB, line tables ([0-9.]+) KB, the running JVMs' method caches ([0-9.]+) KB, "
                  r"inlining scopes ([0-9.]+) KB\)", stderr)
    if not m:
        return {}
    keys = ("jvms", "live_jvms", "methods", "total_kb", "method_table_kb", "line_tables_kb", "method_caches_kb",
            "scopes_kb")
    return {k: float(v) for k, v in zip(keys, m.groups())}
