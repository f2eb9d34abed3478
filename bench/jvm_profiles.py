"""Profiles of testdata/JvmHot.java, read alike from async-profiler, ehprof
and JFR, and the figures they are compared by.

async-profiler (collapsed, threads): "[NAME tid=N];frame;...;leaf COUNT",
Java classes with slashes in packages ("java/lang/Thread.run").
ehprof (folded): "COMM;frame;...;leaf COUNT", the thread's comm first (a
Java thread's comm is its name, cut to 15 bytes), C++ frames with their
parameter lists, a file:line in parentheses with --srcline.
JFR (`jfr print --json --stack-depth 64 --events jdk.ExecutionSample`):
one event a sample, its frames leaf first, each a method's class
("JvmHot$Square", slashes in packages) and name; Java frames only. Frames
are normalised to dotted class names with annotation suffixes (_[j]) and
anything from the first "(" on dropped, so both spell a Java method
"JvmHot.hashMix", "JvmHot$Square.area", "java.lang.Thread.run".

Per sample, the deepest workload method is the innermost JvmHot frame; the
Java caller chain is the sequence of JvmHot frames, root to leaf.
Chains are also counted without the samples in libm's fmod (on JDK 17 a
double % calls it from compiled code with no frame anchor, and
async-profiler, through AsyncGetCallTrace, has no Java frame for any of
them: [unknown_Java]), so that the two profilers' chains are compared over
the samples both can walk.
Standard library only.
"""
import collections
import json
import re

# JvmHot's three threads and their hot methods (testdata/JvmHot.java).
HOT = {
    "hot-arith": ["JvmHot.hashMix", "JvmHot.smallStep", "JvmHot.fmodLoop"],
    "hot-virtual": ["JvmHot$Square.area", "JvmHot$Circle.area", "JvmHot.fib", "JvmHot.sortSmall"],
    "hot-data": ["JvmHot.crc", "JvmHot.matMul", "JvmHot.sieve"],
}
THREADS = tuple(HOT)
NO_JAVA = "(no JvmHot frame)"
# The fmod a double % ends in, as the two profilers name it: libm's (glibc
# exports one address under several names: fmod, fmodf32x, fmodf64,
# __fmod_finite, __ieee754_fmod), or HotSpot's own copy in JDK 21 (libmFmod).
FMOD = {"fmod", "fmodf32x", "fmodf64", "__fmod", "__fmod_finite", "__ieee754_fmod", "libmFmod"}
_ANNOTATION = re.compile(r"_\[[a-z0-9]\]$")


def normalise(frame):
    """A frame name as both profilers would agree to spell it."""
    frame = frame.strip()
    frame = _ANNOTATION.sub("", frame)
    if not frame.startswith("[") and "(" in frame:
        frame = frame[:frame.index("(")].rstrip()
    return frame.replace("/", ".")


def is_workload(frame):
    return frame.startswith("JvmHot.") or frame.startswith("JvmHot$")


def thread_of(first, source):
    """The thread's name from a folded stack's first field."""
    if source == "asprof":
        m = re.match(r"\[(.*?)(?: tid=\d+)?\]$", first)
        return m.group(1)[:15] if m else first[:15]
    return first


def jfr_stacks(path):
    """(thread, frames root to leaf, 1) per jdk.ExecutionSample event of a
    `jfr print --json` file."""
    with open(path, errors="replace") as f:
        events = json.load(f).get("recording", {}).get("events", [])
    for e in events:
        v = e.get("values") or {}
        thread = ((v.get("sampledThread") or {}).get("javaName") or "")[:15]
        frames = []
        for fr in reversed((v.get("stackTrace") or {}).get("frames") or []):
            m = fr.get("method") or {}
            frames.append(f"{(m.get('type') or {}).get('name', '?')}.{m.get('name', '?')}")
        yield thread, frames, 1


_PERF_HEADER = re.compile(r"^(.*?)\s+\d+(?:/\d+)?\s+(?:\[\d+\]\s+)?(\d+\.\d+):")


def perf_script_stacks(path, window):
    """(thread, frames root to leaf, 1) per sample of ehprof's perf-script
    output whose time (CLOCK_MONOTONIC seconds) is in window, a (begin,
    end) pair: "COMM TID [CPU] TIME: PERIOD EVENT:", then a line a frame,
    leaf first, "ADDRESS NAME (DSO)", a blank line after each sample."""
    with open(path, errors="replace") as f:
        blocks = f.read().split("\n\n")
    for block in blocks:
        lines = [line for line in block.split("\n") if line.strip()]
        m = _PERF_HEADER.match(lines[0]) if lines else None
        if not m or not window[0] <= float(m.group(2)) <= window[1]:
            continue
        frames = [line.strip().partition(" ")[2].rpartition(" (")[0] or line.strip() for line in lines[1:]]
        yield m.group(1)[:15], frames[::-1], 1


def folded_stacks(path, source):
    """(thread, frames root to leaf, count) per line of a folded file."""
    with open(path, errors="replace") as f:
        for line in f:
            stack, _, count = line.rstrip("\n").rpartition(" ")
            if stack and count.isdigit():
                fields = stack.split(";")
                yield thread_of(fields[0], source), fields[1:], int(count)


class Profile:
    """Counts per JvmHot thread from one profile: source "asprof" or
    "ehprof" (folded), "ehprof_perf" (perf-script: its samples in window
    alone) or "jfr" (jfr print --json)."""

    def __init__(self, path, source, window=None):
        self.samples = collections.Counter()    # thread -> samples
        self.deepest = collections.Counter()    # (thread, method) -> samples
        self.chains = collections.Counter()     # (thread, chain) -> samples with a JvmHot frame
        self.chains_no_fmod = collections.Counter()  # the same, of the samples not in libm's fmod
        self.with_java = collections.Counter()  # thread -> samples with a JvmHot frame
        # thread -> samples reaching the thread's start: start_thread, or
        # HotSpot's thread_native_entry it calls (a libc without symbols
        # leaves start_thread unnamed)
        self.reach_start = collections.Counter()
        self.fmod_leaf = collections.Counter()  # thread -> samples whose leaf is libm's fmod
        self.fmod_named = collections.Counter()  # thread -> those that also carry JvmHot.fmodLoop
        if source == "jfr":
            stacks = jfr_stacks(path)
        elif source == "ehprof_perf":
            stacks = perf_script_stacks(path, window)
        else:
            stacks = folded_stacks(path, source)
        for thread, frames, n in stacks:
            self._add(thread, frames, n)

    def _add(self, thread, frames, n):
        if thread not in HOT:
            return
        frames = [normalise(f) for f in frames]
        java = tuple(f for f in frames if is_workload(f))
        self.samples[thread] += n
        self.deepest[(thread, java[-1] if java else NO_JAVA)] += n
        in_fmod = bool(frames) and frames[-1] in FMOD
        if java:
            self.with_java[thread] += n
            self.chains[(thread, java)] += n
            if not in_fmod:
                self.chains_no_fmod[(thread, java)] += n
        if "start_thread" in frames or "thread_native_entry" in frames:
            self.reach_start[thread] += n
        if in_fmod:
            self.fmod_leaf[thread] += n
            if "JvmHot.fmodLoop" in java:
                self.fmod_named[thread] += n

    def merge(self, other):
        """Adds another profile's counts (of another run) to these."""
        for name, counter in vars(other).items():
            getattr(self, name).update(counter)

    def total(self):
        return sum(self.samples.values())

    def share(self, thread, method):
        """Percent of the thread's samples whose deepest JvmHot frame is method."""
        return 100.0 * self.deepest[(thread, method)] / self.samples[thread] if self.samples[thread] else 0.0

    def pct(self, counter):
        """Percent of the JvmHot threads' samples that counter counts."""
        return 100.0 * sum(counter.values()) / self.total() if self.total() else 0.0

    def thread_pct(self, counter, thread):
        return 100.0 * counter[thread] / self.samples[thread] if self.samples[thread] else 0.0


def chain_overlap(a, b, chains="chains"):
    """Percent overlap of two multisets of Java caller chains (the
    profiles' attribute `chains`: "chains", or "chains_no_fmod"), per thread
    then averaged over the three threads (so that a profiler sampling some
    threads less, as JFR does, is not judged for it). Per thread, each
    profile's chains are made a distribution over its samples with a
    JvmHot frame, and the overlap is the sum over chains of the smaller
    share (100: the same stacks in the same proportions; 0: none in common,
    or one profile has no Java chain in that thread). Threads neither
    profile has a chain of are left out."""
    overlaps = []
    for thread in THREADS:
        ca = {k[1]: c for k, c in getattr(a, chains).items() if k[0] == thread}
        cb = {k[1]: c for k, c in getattr(b, chains).items() if k[0] == thread}
        na, nb = sum(ca.values()), sum(cb.values())
        if na and nb:
            overlaps.append(100.0 * sum(min(c / na, cb.get(k, 0) / nb) for k, c in ca.items()))
        elif na or nb:
            overlaps.append(0.0)
    return sum(overlaps) / len(overlaps) if overlaps else 0.0


def hottest(profile, n=10):
    """The n hottest (thread, deepest JvmHot method) keys."""
    keys = [(k, c) for k, c in profile.deepest.items() if k[1] != NO_JAVA]
    return [k for k, _ in sorted(keys, key=lambda kc: (-kc[1], kc[0]))[:n]]
