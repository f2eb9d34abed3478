"""Judging aarch64 stacks in perf-script dumps (host paths) where
stackcheck.py does not serve.

Call sites (stackcheck.py's check reads x86-64 call instructions): a frame above the leaf
prints its return address - 1, so the instruction at ra - 4 must be a
branch with link: BL, BLR, or one of the PAC forms BLRAA/BLRAB/BLRAAZ/
BLRABZ. A wrong unwind rarely lands after one."""
import collections
import re
import struct

FRAME = re.compile(r"^\s*([0-9a-fA-F]+)\s+(.*?)\s*\(([^()]*)\)\s*$")


def is_branch_link(insn):
    if insn >> 26 == 0b100101:                       # BL imm26
        return True
    if insn & 0xFFFFFC1F == 0xD63F0000:              # BLR Xn
        return True
    # BLRAA/BLRAB (D73F08xx/D73F0Cxx, Xm in 4:0) and BLRAAZ/BLRABZ
    # (D63F081F/D63F0C1F)
    return insn & 0xFFFFF800 == 0xD73F0800 or insn & 0xFFFFFBFF == 0xD63F081F


class Loads:
    """An ELF file's PT_LOAD segments: ELF vaddr (or file offset, as perf
    prints for non-PIE executables) -> bytes."""

    def __init__(self, path):
        self.f = open(path, "rb")
        h = self.f.read(64)
        if h[:4] != b"\x7fELF" or h[4] != 2:
            raise ValueError(f"{path}: not a 64-bit ELF")
        phoff, = struct.unpack_from("<Q", h, 32)
        phentsize, phnum = struct.unpack_from("<HH", h, 54)
        self.f.seek(phoff)
        ph = self.f.read(phentsize * phnum)
        self.loads = []
        for i in range(phnum):
            p_type, _, off, vaddr, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", ph, i * phentsize)
            if p_type == 1:
                self.loads.append((vaddr, vaddr + filesz, off))

    def to_vaddr(self, addr):
        for lo, hi, off in self.loads:
            if lo <= addr < hi:
                return addr
        for lo, hi, off in self.loads:
            if off <= addr < off + (hi - lo):
                return addr - off + lo
        return addr

    def read32(self, vaddr):
        for lo, hi, off in self.loads:
            if lo <= vaddr and vaddr + 4 <= hi:
                self.f.seek(off + vaddr - lo)
                return struct.unpack("<I", self.f.read(4))[0]
        return None


def _elf(path, cache={}):
    """Loads of path, once; None when it is not a readable 64-bit ELF."""
    if path not in cache:
        try:
            cache[path] = Loads(path)
        except (OSError, ValueError):
            cache[path] = None
    return cache[path]


def _user_frames(block):
    frames = [FRAME.match(l) for l in block.strip("\n").split("\n")[1:]]
    return [(m.group(3), int(m.group(1), 16)) for m in frames if m and m.group(3).startswith("/")]


def _blocks(dump):
    with open(dump, errors="replace") as f:
        return [b for b in f.read().split("\n\n") if b.strip()]


def agree_pct(dump, ref, frame_records=False):
    """Without stackcheck.py: the share of dump's samples whose chain of
    call sites (the leaf dropped; addresses as ELF virtual addresses, which
    perf may print as file offsets) also occurs in ref's, as stackcheck's
    --ref does (fio has no signal frames, which it treats apart).
    frame_records: ref is a walk of frame records (perf -g, which prints
    return addresses themselves), which has no frame for the caller of a leaf that keeps its return address in x30
    (no frame record of its own): a chain matches with or without its
    first call site."""
    def chain(block, back=0):
        return tuple((path, (_elf(path).to_vaddr(addr) if _elf(path) else addr) - back)
                     for path, addr in _user_frames(block)[1:])
    # perf -g prints return addresses, not return address - 1.
    ref_chains = {chain(b, 1 if frame_records else 0) for b in _blocks(ref)}
    mine = [chain(b) for b in _blocks(dump)]
    hits = sum(c in ref_chains or (frame_records and c[1:] in ref_chains) for c in mine)
    return round(100.0 * hits / len(mine), 2) if mine else None


def drop_exit_samples(dump):
    """Rewrites dump without the samples taken in the kernel while the
    thread exits (do_exit on the kernel stack, no user frame: its memory is
    being unmapped, there is no user stack left to walk, for perf either);
    under TCG unmapping Debian 13's fio and its many libraries lasts tens of
    milliseconds. Returns how many were dropped."""
    blocks = _blocks(dump)
    keep = [b for b in blocks if _user_frames(b) or " do_exit (" not in b]
    with open(dump, "w") as f:
        f.write("\n\n".join(b.strip("\n") for b in keep) + "\n")
    return len(blocks) - len(keep)


def outermost_frames(dump, n=3):
    """The n most common outermost user frames of a dump's samples, as
    "COUNT x PATH+0xADDR" (no user frame: "COUNT x -"): where walks that
    failed a check stopped, said in its message (a CI run's guest is gone
    with its dumps by the time anyone reads it)."""
    counts = collections.Counter()
    for b in _blocks(dump):
        frames = _user_frames(b)
        counts[f"{frames[-1][0]}+{frames[-1][1]:#x}" if frames else "-"] += 1
    return [f"{c} x {where}" for where, c in counts.most_common(n)]


def callsite_pct(dump):
    """The share of non-leaf user frames in a perf-script dump (host paths)
    whose address follows a branch with link."""
    frames_seen, calls = 0, 0
    for b in _blocks(dump):
        for path, addr in _user_frames(b)[1:]:
            frames_seen += 1
            e = _elf(path)
            insn = e.read32(e.to_vaddr(addr) + 1 - 4) if e else None
            calls += insn is not None and is_branch_link(insn)
    return round(100.0 * calls / frames_seen, 2) if frames_seen else None
