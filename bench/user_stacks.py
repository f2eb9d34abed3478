"""Judging the user stacks of a perf-script dump the way a whole host needs:
stackcheck (../shared/eval/stackcheck.py) over the samples that have a user
stack, plus the stacks that end in a program's entry routine without CFI.

Left out as having no user stack: samples without a user frame (kernel
threads, tasks past exit_mm) and samples in exec after it replaced the
address space (their kernel frames pass through begin_new_exec or
load_elf_binary: the registers are the old program's, its stack is gone).
Counted as reaching the bottom besides stackcheck's: stacks whose outermost
frame lies within 64 bytes of its file's e_entry where no CFI covers it
(glibc's ld.so: _start and _dl_start_user, every exec's first
milliseconds): the kernel starts the program there with nothing above it,
which stackcheck, trusting CFI alone, cannot tell. The same bound as
unwind_tables/entry_point_rows.h.
"""
import collections
import importlib.util
import os
import re
import struct
import tempfile

import stackcheck_json
from stackcheck_json import stackcheck

STOP = re.compile(r"^\s*0\s+\[stop: (.*)\] \(\[stop\]\)\s*$")
# A walk finished late (agent/deferred/) says so in a frame of its own.
LATE = re.compile(r"^\s*0\s+\[finished late\] \(\[finished late\]\)\s*$")
EXEC_GONE = ("begin_new_exec", "load_elf_binary")
ENTRY_BYTES = 64


class Sample:
    """One block of the dump: its header, lines (stop and late frames
    removed), user frames as split lines, stop reason (or None)."""

    def __init__(self, block):
        lines = [l for l in block.split("\n") if l.strip()]
        self.late = any(LATE.match(l) for l in lines)
        lines = [l for l in lines if not LATE.match(l)]
        self.stop = None
        if lines and STOP.match(lines[-1]):
            self.stop = STOP.match(lines.pop()).group(1)
        self.lines = lines
        self.header = lines[0].split() if lines else []
        self.comm = self.header[0] if self.header else ""
        self.pid = self.header[1].split("/")[0] if len(self.header) > 1 else ""
        m = re.search(r"\s(\d+\.\d+):", lines[0]) if lines else None
        self.time = float(m.group(1)) if m else 0.0
        self.user = [l.split() for l in lines[1:] if "[kernel" not in l]
        self.kernel = {l.split()[1] for l in lines[1:] if "[kernel" in l and len(l.split()) > 1}

    def no_user_stack(self):
        """Why the sample has no user stack to judge, or None."""
        if not self.user:
            return "no user frame"
        if self.kernel.intersection(EXEC_GONE):
            return "in exec, address space replaced"
        return None

    def text(self):
        return "\n".join(self.lines) + "\n\n"


def samples(dump):
    with open(dump, errors="replace") as f:
        for block in f.read().split("\n\n"):
            s = Sample(block)
            if s.lines:
                yield s


def entry_point(path, cache={}):
    """The ELF header's e_entry of path (None when it is not a readable ELF64)."""
    if path not in cache:
        cache[path] = None
        try:
            with open(path, "rb") as f:
                head = f.read(64)
            if len(head) == 64 and head[:4] == b"\x7fELF" and head[4] == 2:
                cache[path] = struct.unpack_from("<Q", head, 24)[0]
        except OSError:
            pass
    return cache[path]


def stackcheck_module(cache=[]):
    if not cache:
        spec = importlib.util.spec_from_file_location("stackcheck", stackcheck_json.STACKCHECK)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        cache.append(mod)
    return cache[0]


def ends_at_entry(s):
    """Whether s's outermost frame is in its file's entry routine with no CFI."""
    if s.stop or not s.user:
        return False
    addr, dso = s.user[-1][0], s.user[-1][-1].strip("()")
    entry = entry_point(dso)
    if entry is None:
        return False
    a = int(addr, 16)
    return entry <= a < entry + ENTRY_BYTES and not stackcheck_module().Cfi.of(dso).ra_undefined(a)


def judge(chosen):
    """Figures for an iterable of Samples: samples, no_user_stack (Counter by
    why), user_samples, stackcheck_pct (over those), ends_at_entry_point,
    user_complete_pct."""
    no_user = collections.Counter()
    with tempfile.NamedTemporaryFile("w", suffix=".perf-script") as f:
        n = entry = 0
        for s in chosen:
            n += 1
            why = s.no_user_stack()
            if why:
                no_user[why] += 1
                continue
            f.write(s.text())
            entry += ends_at_entry(s)
        f.flush()
        r = stackcheck(f.name)
    users = r.get("samples", 0)
    checked = round(r.get("complete_pct", 0) * users / 100)
    return {"samples": n, "no_user_stack": no_user, "user_samples": users,
            "stackcheck_pct": r.get("complete_pct", 0), "ends_at_entry_point": entry,
            "user_complete_pct": round(100.0 * (checked + entry) / users, 2) if users else 0.0}
