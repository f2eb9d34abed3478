"""testdata's programs for the arm64 guest: the cases fio does not reach
(a signal handler's frames over the vDSO's __kernel_rt_sigreturn, calls
through the PLT into libc and back, JIT code without CFI left through its
frame record, off-CPU time), cross-built here for aarch64 as testdata's
CMake builds them for x86-64 (-O2 -fomit-frame-pointer, stripped copies),
and their stacks judged on the host.

A stack is judged by outside references only: function names from the
unstripped twin's symbol table read by binutils' nm (by address, so the
stripped copy's frames are named too), the bottom by readelf's CFI
(judge.ra_undefined: where the return address is undefined, _start).
"""
import os
import re
import subprocess

import judge

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TESTDATA = os.path.join(REPO, "testdata")
FLAGS = ["-O2", "-g", "-fomit-frame-pointer", "-fno-optimize-sibling-calls", "-I", TESTDATA]
# name -> (extra flags, the argument the guest runs it with)
PROGRAMS = {
    "sig_handler": ([], "2"),
    "plt_calls": (["-fno-builtin"], "2"),
    "jit_sim": ([], "2"),
    "offcpu_sleep": ([], "2"),  # judged by judge_offcpu
    "deep_recursion": ([], "70 10"),
}
# For each program whose samples are judged: the leaf function, and the
# chains (outermost last, as a subsequence of the sample's frames named by
# nm; "lib:NAME" a frame in that library, "[vdso]" one in the vDSO) one of
# which each such sample must show, ending at readelf's bottom frame.
CHAINS = {
    "sig_handler": ("sig_handler_work", [
        ["sig_handler_work", "sig_handler_outer", "sig_prof_handler", "[vdso]", "sig_main_loop", "main"]]),
    "plt_calls": ("plt_compare", [
        ["plt_compare", "lib:libc.so.6", "plt_inner", "plt_outer", "main"]]),
    "jit_sim": ("[jit]", [["[jit]", "jit_caller", "main"]]),
}


def build(outdir):
    """Cross-builds the programs into outdir (NAME and NAME.stripped);
    returns an error string or None."""
    os.makedirs(outdir, exist_ok=True)
    for name, (extra, _) in PROGRAMS.items():
        out = os.path.join(outdir, name)
        src = os.path.join(TESTDATA, name + ".c")
        r = subprocess.run(["clang", "--target=aarch64-linux-gnu", *FLAGS, *extra, "-o", out, src],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return f"clang --target=aarch64-linux-gnu {name}.c: {r.stderr.strip()[-400:]}"
        r = subprocess.run(["aarch64-linux-gnu-strip", "--strip-all", "-o", out + ".stripped", out],
                           capture_output=True, text=True)
        if r.returncode != 0:
            return f"aarch64-linux-gnu-strip {name}: {r.stderr.strip()}"
    return None


def symbols(path, _cache={}):
    """[(start, end, name)] of path's functions, by binutils' nm."""
    if path not in _cache:
        r = subprocess.run(["nm", "--defined-only", "-S", path], capture_output=True, text=True)
        syms = []
        for line in r.stdout.splitlines():
            f = line.split()
            if len(f) == 4 and f[2] in "tTwW":
                syms.append((int(f[0], 16), int(f[0], 16) + int(f[1], 16), f[3]))
        _cache[path] = syms
    return _cache[path]


FRAME = re.compile(r"^\s*([0-9a-f]+) .*\(([^()]*)\)\s*$")


def host_path(path, rootdir, bindir):
    """The host's path of a file the guest named."""
    if path.startswith("/ehprof/bin/"):
        return os.path.join(bindir, path[len("/ehprof/bin/"):])
    return rootdir + path if path.startswith("/") else path


def named_chain(block, twin, rootdir, bindir):
    """A sample's user frames, leaf first: (name, host path, address)."""
    out = []
    for line in block.split("\n")[1:]:
        m = FRAME.match(line)
        if not m or m.group(2).startswith("[kernel") or m.group(2) == "inlined":
            continue
        addr, dso = int(m.group(1), 16), m.group(2)
        path = host_path(dso, rootdir, bindir)
        if dso == "[vdso]":
            name = "[vdso]"
        elif dso.startswith("//anon") or "perf-" in dso or "[jit]" in line:
            name = "[jit]"
        elif os.path.basename(dso).split(".stripped")[0] == os.path.basename(twin):
            name = next((n for s, e, n in symbols(twin) if s <= addr < e), "?")
        else:
            name = "lib:" + os.path.basename(dso)
        out.append((name, path, addr))
    return out


def at_bottom(chain):
    """Whether a chain's outermost frame is where readelf's CFI says the
    return address is undefined (_start)."""
    _, path, addr = chain[-1]
    return os.path.exists(path) and any(s <= addr < e for s, e in judge.ra_undefined(path))


def follows(chain, want):
    """Whether want's names occur in chain in order (others between)."""
    i = 0
    for name, _, _ in chain:
        if i < len(want) and name == want[i]:
            i += 1
    return i == len(want)


def judge_program(dump, name, rootdir, bindir):
    """{samples, leaf_samples, complete_pct, chain_pct}: of the samples whose
    leaf is CHAINS' leaf, the share reaching readelf's bottom frame and the
    share that also shows one of the expected chains."""
    twin = os.path.join(bindir, "testdata-a64", name)
    leaf, chains = CHAINS[name]
    with open(dump, errors="replace") as f:
        blocks = [b.strip("\n") for b in f.read().split("\n\n") if b.strip()]
    total = at_leaf = complete = chained = 0
    for b in blocks:
        chain = named_chain(b, twin, rootdir, bindir)
        if not chain:
            continue
        total += 1
        if chain[0][0] != leaf:
            continue
        at_leaf += 1
        bottom = at_bottom(chain)
        complete += bottom
        chained += bottom and any(follows(chain, want) for want in chains)
    pct = (lambda n: round(100.0 * n / at_leaf, 2) if at_leaf else None)
    return {"samples": total, "leaf_samples": at_leaf, "complete_pct": pct(complete),
            "chain_pct": pct(chained)}


PERIOD = re.compile(r": +(\d+) \S+: *$")


def judge_offcpu(dump, rootdir, bindir):
    """offcpu_sleep (stripped) blocks 100 ms in sleep_a and 300 ms in sleep_b
    in turn: each block's nanoseconds (its sample's period) charged to the
    one whose chain reaches readelf's bottom frame. The blocks' means differ
    by 200 ms whatever the wake-up latency of a loaded machine adds to each;
    their b:a ratio does not (a guest on a busy host gave 2.62). The program
    sleeps in sleep_a and sleep_b in turn, so consecutive events in the same
    one are one block: a sleep woken early and put back to sleep by the
    kernel (nanosleep restarts) is two off-CPU events (a 6.1 guest under a
    loaded host once split a 300 ms block into two, making its mean 250)."""
    twin = os.path.join(bindir, "testdata-a64", "offcpu_sleep")
    ns = {"a": 0, "b": 0, "incomplete": 0}
    blocks = {"a": 0, "b": 0}
    last = None
    with open(dump, errors="replace") as f:
        text = f.read()
    for b in (b.strip("\n") for b in text.split("\n\n") if b.strip()):
        m = PERIOD.search(b.split("\n", 1)[0])
        chain = named_chain(b, twin, rootdir, bindir)
        if not m or not chain:
            continue
        bottom = at_bottom(chain)
        for which in ("a", "b"):
            if follows(chain, [f"sleep_{which}", "sleep_loop", "main"]):
                if bottom:
                    ns[which] += int(m.group(1))
                    blocks[which] += which != last
                    last = which
                else:
                    ns["incomplete"] += int(m.group(1))
    mean = {w: ns[w] / 1e6 / blocks[w] if blocks[w] else None for w in ("a", "b")}
    return {"a_ns": ns["a"], "b_ns": ns["b"], "incomplete_ns": ns["incomplete"],
            "blocks_a": blocks["a"], "blocks_b": blocks["b"],
            "mean_a_ms": round(mean["a"], 1) if mean["a"] else None,
            "mean_b_ms": round(mean["b"], 1) if mean["b"] else None,
            "mean_diff_ms": round(mean["b"] - mean["a"], 1) if mean["a"] and mean["b"] else None,
            "b_to_a": round(ns["b"] / ns["a"], 3) if ns["a"] else None}
