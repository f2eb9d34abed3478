"""DWARF expressions behind readelf's "exp" cells, decoded for the comparison.

`readelf --debug-dump=frames-interp` prints every expression rule as "exp",
so on its own it cannot tell a PLT expression from a stack-realignment load.
This module reads the raw dump (`--debug-dump=frames`), replays each
program's expression-setting instructions per location, and decodes the
expressions readelf spelled out ("DW_OP_breg7 (rsp): 8; DW_OP_deref; ...")
into the form `ehprof tables` prints for the same rule: "plt", "plt10",
"REG±N", "*(REG±N)[±M]" or "expr" for the CFA; "*(REG±N)" or "other" for a
register. The decoding is written from the DWARF operators' meaning, not
from ehprof's classifier, so the two are compared, not copied.
Standard library only.
"""

import bisect
import re
import subprocess

RE_SECTION = re.compile(r"^Contents of the (\S+) section")
RE_HEADER = re.compile(r"^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ (CIE|FDE)(?: cie=([0-9a-f]+) pc=([0-9a-f]+))?")
RE_OP = re.compile(r"^  (DW_CFA_\w+)(.*)$")
RE_TO = re.compile(r"to ([0-9a-f]+)\s*$")
RE_REG = re.compile(r"r(\d+) \(\w+\)")
RE_BREG = re.compile(r"^DW_OP_breg(\d+) \(\w+\): (-?\d+)$")
RE_LIT = re.compile(r"^DW_OP_lit(\d+)$")
RE_CONST = re.compile(r"^DW_OP_const(?:\d[us]|u|s): (-?\d+)$")
RBP = 6
NAMES = ["rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11",
         "r12", "r13", "r14", "r15", "rip"]
# binutils' PLT CFA: rsp + 8 + (((rip & 15) >= LIT) << 3), LIT 11 or 10.
PLT = ["DW_OP_breg7 (rsp): 8", "DW_OP_breg16 (rip): 0", "DW_OP_lit15", "DW_OP_and",
       "DW_OP_lit{}", "DW_OP_ge", "DW_OP_lit3", "DW_OP_shl", "DW_OP_plus"]


def _reg_off(reg, off):
    name = NAMES[reg] if reg < len(NAMES) else "r%d" % reg
    return "%s%s%d" % (name, "+" if off >= 0 else "-", abs(off))


def _constant(op):
    m = RE_LIT.match(op) or RE_CONST.match(op)
    return int(m.group(1)) if m else None


def decode_cfa(ops_text):
    """A DW_CFA_def_cfa_expression's operators -> ehprof's CFA form."""
    ops = [o.strip() for o in ops_text.split(";")]
    for lit, form in ((11, "plt"), (10, "plt10")):
        if ops == [p.format(lit) for p in PLT]:
            return form
    m = RE_BREG.match(ops[0]) if ops else None
    if not m:
        return "expr"
    base = _reg_off(int(m.group(1)), int(m.group(2)))
    if len(ops) == 1:
        return base  # the value of reg+off: an ordinary CFA rule
    if ops[1] != "DW_OP_deref":
        return "expr"
    add = 0
    if len(ops) == 3 and ops[2].startswith("DW_OP_plus_uconst: "):
        add = int(ops[2].split(": ")[1])
    elif len(ops) == 4 and _constant(ops[2]) is not None and ops[3] in ("DW_OP_plus", "DW_OP_minus"):
        add = _constant(ops[2]) * (1 if ops[3] == "DW_OP_plus" else -1)
    elif len(ops) != 2:
        return "expr"
    loaded = "*(%s)" % base
    return loaded if add == 0 else "%s%s%d" % (loaded, "+" if add > 0 else "-", abs(add))


def decode_reg(op, ops_text):
    """A register's DW_CFA_expression / DW_CFA_val_expression -> ehprof's form:
    the saved value is at the address the expression computes, so a single
    DW_OP_bregN is a load from REG+N; anything else is "other"."""
    if op == "DW_CFA_expression":
        m = RE_BREG.match(ops_text.strip())
        if m:
            return "*(%s)" % _reg_off(int(m.group(1)), int(m.group(2)))
    return "other"


class RawFrames:
    """Per FDE: (locs, states) with state = (cfa form or None, rbp form or
    None) after the instructions at each location."""

    def __init__(self):
        self.fdes = {}
        self.cies = {}
        self.section = None

    def feed_all(self, lines, wanted=None):
        """Replays the dump's programs; with `wanted`, a set of (section,
        FDE offset), only those FDEs (and every CIE)."""
        cur = None      # [state, stack, locs, states, cie_state]
        key = None
        for line in lines:
            if line.startswith("  "):
                m = RE_OP.match(line) if cur is not None else None
                if m:
                    self._op(cur, m.group(1), m.group(2), key[0] != "CIE")
                continue
            m = RE_SECTION.match(line)
            if m:
                self.section, cur = m.group(1), None
                continue
            m = RE_HEADER.match(line)
            if m:
                off = int(m.group(1), 16)
                if m.group(2) == "CIE":
                    key = ("CIE", self.section, off)
                    cur = [(None, None), [], [], [], (None, None)]
                    self.cies[(self.section, off)] = cur
                elif wanted is not None and (self.section, off) not in wanted:
                    cur = None
                else:
                    cie = self.cies.get((self.section, int(m.group(3), 16)))
                    init = cie[0] if cie else (None, None)
                    key = (self.section, off)
                    cur = [init, [], [int(m.group(4), 16)], [init], init]
                    self.fdes[key] = cur

    def _op(self, cur, op, rest, in_fde):
        cfa, rbp = cur[0]
        if op.startswith("DW_CFA_advance_loc") or op == "DW_CFA_set_loc":
            t = RE_TO.search(rest) or re.search(r"([0-9a-f]+)\s*$", rest)
            if in_fde and t:
                cur[2].append(int(t.group(1), 16))
                cur[3].append(cur[0])
            return
        if op == "DW_CFA_def_cfa_expression":
            cfa = decode_cfa(rest.strip()[1:-1])
        elif op.startswith("DW_CFA_def_cfa_offset"):
            # Changes only the offset: over an expression (ill-formed, but
            # in Debian 13's arm64 libmvec) the CFA stays the expression, as
            # binutils' interpreter keeps it.
            pass
        elif op.startswith("DW_CFA_def_cfa"):
            cfa = None
        elif op == "DW_CFA_remember_state":
            cur[1].append(cur[0])
        elif op == "DW_CFA_restore_state":
            if cur[1]:
                cfa, rbp = cur[1].pop()
        else:
            r = RE_REG.search(rest)
            if r and int(r.group(1)) == RBP:
                if op in ("DW_CFA_expression", "DW_CFA_val_expression"):
                    rbp = decode_reg(op, rest[r.end():].strip()[1:-1])
                elif op.startswith("DW_CFA_restore"):
                    rbp = cur[4][1]
                else:
                    rbp = None
        cur[0] = (cfa, rbp)
        if in_fde:
            cur[3][-1] = cur[0]
        else:
            cur[4] = cur[0]

    def lookup(self, section, fde_offset, loc):
        f = self.fdes.get((section, fde_offset))
        if f is None:
            return (None, None)
        i = bisect.bisect_right(f[2], loc) - 1
        return f[3][i] if i >= 0 else (None, None)


def raw_frames(path, env=None, wanted=None):
    """RawFrames of `path` (the `wanted` FDEs), from readelf's raw dump (its
    own sections only), streamed."""
    p = subprocess.Popen(["readelf", "--wide", "--debug-dump=no-follow-links",
                          "--debug-dump=frames", path], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True, errors="replace", env=env,
                         bufsize=1 << 20)
    rf = RawFrames()
    rf.feed_all((l.rstrip("\n") for l in p.stdout), wanted)
    p.wait()
    return rf
