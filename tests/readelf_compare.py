#!/usr/bin/env python3
"""Cross-check `ehprof tables FILE` against binutils' CFI interpreter.

The reference is `readelf --debug-dump=frames-interp FILE`: binutils replays
every CIE/FDE program itself and prints the resulting table, so agreeing with
it is strong evidence our builder interprets CFI correctly.  Only what the
profiler needs is compared: the CFA rule, the rbp rule, the return-address
rule and the signal-frame flag.

Usage:
    readelf_compare.py --ehprof build/ehprof FILE [FILE...]
    readelf_compare.py --ehprof build/ehprof --tree /usr/lib /usr/bin [-j N] [--json OUT]
    readelf_compare.py --self-test        # parser/matcher unit checks, no ehprof needed

Per file: readelf_rows = rows readelf printed for FDEs plus FDEs that print
none (they inherit the CIE's initial row); checked = those rows actually
compared (inside [START, END) of a non-empty FDE, last of any rows sharing a
LOC, .debug_frame rows only where no .eh_frame FDE covers the address);
overlaps = FDEs overlapping another FDE of the same section, whose rows are
tallied separately (overlap_rows/overlap_mismatches in --json) because
which of them the builder should honour is undefined.

Exit status: 1 if any file had mismatches or ehprof failed on it, else 0.
Non-ELF, non-x86-64, relocatable and CFI-less files are skipped, not failed.
Standard library only (plus the `readelf` binary).
"""

import argparse
import bisect
import concurrent.futures
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import readelf_exprs  # noqa: E402

EM_X86_64 = 62
EM_AARCH64 = 183
ET_REL = 1
ET_CORE = 4

# readelf line shapes (binutils 2.40).  FDE/CIE ids are printed with a width
# that depends on the DWARF format (32/64-bit), so only shape is assumed.
RE_SECTION = re.compile(r"^Contents of the (\S+) section")
RE_CIE = re.compile(r'^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ CIE "([^"]*)"')
RE_FDE = re.compile(
    r"^([0-9a-f]+) [0-9a-f]+ [0-9a-f]+ FDE cie=([0-9a-f]+) "
    r"pc=([0-9a-f]+)\.\.([0-9a-f]+)")


# --------------------------------------------------------------------------
# Field matching.  Each returns None when readelf's cell and our field agree,
# or a short reason string.  Both sides are plain strings so results can be
# cached per distinct (readelf cells, our row) pair, which is what keeps the
# per-row cost low on a library with ~10^6 rows.
# --------------------------------------------------------------------------

def _norm_off(s):
    # readelf prints "%+d" ("rsp-8"); a printer that appends a signed offset
    # to "+" yields "rsp+-8".  Treat both as the same rule.
    return s.replace("+-", "-")


def match_cfa(re_cfa, ours):
    if ours is None:
        return "cfa missing"
    if re_cfa.startswith("exp"):
        # DW_CFA_def_cfa_expression: frames-interp prints "exp"; the raw
        # dump's operators, decoded by readelf_exprs, give "exp:FORM".
        return None if re_cfa == "exp:" + _norm_off(ours) else "cfa"
    if _norm_off(re_cfa) == _norm_off(ours):
        return None
    return "cfa"


def _cfa_offset_form(cell):
    # "c-16" (DW_CFA_offset family) -> "cfa-16"; None if not that form.
    if len(cell) >= 3 and cell[0] == "c" and cell[1] in "+-" and cell[2:].isdigit():
        return "cfa" + _norm_off(cell[1:])
    return None


def match_ra(re_ra, ours):
    if ours is None:
        return "ra missing"
    # An absent ra column means the CIE never set it: DWARF-undefined on
    # x86-64. On aarch64 readelf prints "u" both for a column never set (the
    # return address still in the link register: ours "x30") and for
    # DW_CFA_undefined x30 (_start: ours "undef").
    if re_ra is None or re_ra == "u":
        return None if ours in ("undef", "x30") else "ra"
    if re_ra == "s":
        # DW_CFA_same_value: aarch64's return address stays in the link register.
        return None if ours == "x30" else "ra"
    want = _cfa_offset_form(re_ra)
    if want is not None:
        return None if _norm_off(ours) == want else "ra"
    # DW_CFA_register, "r5 (rdi)": ours names x86-64's general register.
    reg = re.fullmatch(r"r\d+ \((\w+)\)", re_ra)
    if reg and ours == reg.group(1):
        return None
    return None if ours == "other" else "ra"


def match_rbp(re_rbp, ours):
    if ours is None:
        return "rbp missing"
    # readelf prints "u" both for "never mentioned" and DW_CFA_undefined and
    # omits the column when the FDE never touches rbp; our builder may render
    # "never mentioned" as same-value, so both are accepted.
    if re_rbp is None or re_rbp == "u":
        return None if ours in ("same", "undef") else "rbp"
    if re_rbp == "s":
        return None if ours == "same" else "rbp"
    want = _cfa_offset_form(re_rbp)
    if want is not None:
        return None if _norm_off(ours) == want else "rbp"
    if re_rbp.startswith("exp"):
        return None if re_rbp == "exp:" + _norm_off(ours) else "rbp"
    # v+N, vexp, "rN (name)" (DW_CFA_register), n/a
    return None if ours == "other" else "rbp"


def match_rbx(re_rbx, ours):
    # Only rows of files whose walks track rbx (a CFA based on it) say
    # "rbx=": "same" where readelf has it unmentioned or same-value, a save
    # slot where readelf has one; judged where ours says it.
    if re_rbx is None or re_rbx in ("u", "s"):
        return None if ours == "same" else "rbx"
    want = _cfa_offset_form(re_rbx)
    return None if want is not None and _norm_off(ours) == want else "rbx"


def parse_our_row(rest):
    """'cfa=rsp+8 rbp=same ra=cfa-8 signal' -> (cfa, rbp, ra, signal, none, rbx)."""
    fields = {}
    flags = set()
    for tok in rest.split():
        k, sep, v = tok.partition("=")
        if sep:
            fields[k] = v
        else:
            flags.add(tok)
    if "none" in flags:
        return (None, None, None, False, True, None)
    # The frame register is rbp on x86-64, x29 on aarch64.
    return (fields.get("cfa"), fields.get("rbp", fields.get("x29")), fields.get("ra"),
            "signal" in flags, False, fields.get("rbx"))


def compare_row(cells, ours_rest, want_signal, _cache={}):
    """cells = (cfa, rbp, ra, rbx) as readelf printed them (all but cfa may
    be None; rbx is judged in rows of ours that track it).

    ours_rest is our row text after the address, or None if no row of ours
    is in force.  Returns None on agreement, else a comma-joined list of the
    fields that differ.
    """
    key = (cells, ours_rest, want_signal)
    r = _cache.get(key, 0)
    if r != 0:
        return r
    if ours_rest is None:
        r = "no row"
    else:
        cfa, rbp, ra, signal, none, rbx = parse_our_row(ours_rest)
        if none:
            r = "none"
        else:
            bad = [x for x in (match_cfa(cells[0], cfa),
                               match_rbp(cells[1], rbp),
                               match_ra(cells[2], ra),
                               match_rbx(cells[3] if len(cells) > 3 else None, rbx) if rbx else None) if x]
            if signal != want_signal:
                bad.append("signal")
            r = ",".join(bad) or None
    if len(_cache) < 200000:
        _cache[key] = r
    return r


# --------------------------------------------------------------------------
# Our side: `ehprof tables FILE`.
# --------------------------------------------------------------------------

class OurTable:
    """Sorted rows; row i governs [addrs[i], addrs[i+1])."""

    def __init__(self, text):
        addrs, rests = [], []
        for line in text.splitlines():
            if not line or line[0] == "#":
                continue
            addr, _, rest = line.partition(" ")
            addrs.append(int(addr, 16))
            rests.append(sys.intern(rest.strip()))
        self.unsorted = any(addrs[i] > addrs[i + 1] for i in range(len(addrs) - 1))
        if self.unsorted:
            # Not our contract, but still let the comparison run; the flag is
            # reported so the ordering bug is not silently hidden.
            order = sorted(range(len(addrs)), key=addrs.__getitem__)
            addrs = [addrs[i] for i in order]
            rests = [rests[i] for i in order]
        self.addrs = addrs
        self.rests = rests

    def lookup(self, addr):
        """(row address, row text) in force at addr, or (None, None)."""
        i = bisect.bisect_right(self.addrs, addr) - 1
        if i < 0:
            return None, None
        return self.addrs[i], self.rests[i]


# --------------------------------------------------------------------------
# readelf side.
# --------------------------------------------------------------------------

def split_row(line):
    """Tokenise a readelf row/header.

    DW_CFA_register cells print as "r3 (rbx)", i.e. with a space, so a token
    starting with "(" belongs to the previous one.  Column widths are not
    fixed either (%-5s overflows), hence tokens rather than slicing.
    """
    toks = line.split()
    if "(" in line:
        merged = []
        for t in toks:
            if t[0] == "(" and merged:
                merged[-1] += " " + t
            else:
                merged.append(t)
        toks = merged
    return toks


class Fde:
    __slots__ = ("section", "offset", "start", "end", "aug", "n_checked",
                 "mismatches", "rows", "unchecked", "ours_checked", "source")

    def __init__(self, section, offset, start, end, aug):
        self.section = section
        self.offset = offset
        self.start = start
        self.end = end
        self.aug = aug
        self.n_checked = 0
        self.mismatches = []
        # For .debug_frame only: every checked (loc, mismatch-or-None), since
        # whether a row counts depends on .eh_frame coverage known at the end.
        self.rows = [] if section.startswith(".debug_frame") else None
        self.unchecked = 0
        self.ours_checked = 0
        self.source = None


def _merge(intervals):
    """Sorted, merged [start, end) lists."""
    merged = []
    for s, e in sorted(intervals):
        if merged and s <= merged[-1][1]:
            if e > merged[-1][1]:
                merged[-1][1] = e
        else:
            merged.append([s, e])
    return merged


class ReadelfChecker:
    """Consumes readelf lines one at a time and checks each row immediately.

    Rows are checked as they stream (only mismatches are kept), so memory
    stays bounded on large libraries; decisions that need the whole file
    (FDE overlaps, .eh_frame coverage for .debug_frame rows) are applied in
    finish().
    """

    def __init__(self, table):
        self.table = table
        self.section = None
        self.cies = {}          # (section, offset) -> (aug, cells-or-None)
        self.fdes = []
        self.readelf_rows = 0
        self.unparsed = []      # unexpected lines, for diagnosing format drift
        self.cur_cie = None     # (section, offset, aug) while in a CIE
        self.cur_fde = None
        self.header = None      # (ncols, rbp, ra and rbx index) of this block
        self.pending = None     # (loc, cells) of the FDE row awaiting check
        self.fde_had_rows = False
        self.cie_cells = None   # initial row of the current FDE's CIE
        self.fde_locs = []      # the current FDE's rows in [start, end),
        self.fde_cells = []     # last of any sharing a LOC, for the reverse check
        self.deferred = []      # rows with "exp" cells, judged by resolve()
        self.raw = None         # {source: readelf_exprs.RawFrames} once resolve() ran
        self.source = None      # the file being fed: None (the file itself) or its debug file
        self.only = None        # the sections to read from it (None: all)
        self.skipping = False
        self.plt_ranges = []    # [start, end) of .plt where our rows come from the code (aarch64)
        self.init_ranges = []   # [start, end) of .init/.fini, likewise (x86-64)
        self.text_ranges = []   # [start, end) of .text when crtbegin's functions got rows (x86-64)
        self.gopclntab = False  # our rows outside every FDE may come from Go's .gopclntab
        self.entry = None  # e_entry: an entry point without an FDE gets rows of ours

    # -- helpers ----------------------------------------------------------

    def _set_header(self, toks):
        # toks = ["LOC", "CFA", reg, reg, ..., "ra"]; column i of a row is
        # toks[i] of the header.
        rbp = ra = rbx = None
        for i, name in enumerate(toks):
            if name in ("rbp", "x29"):
                rbp = i
            elif name == "ra":
                ra = i
            elif name == "rbx":
                rbx = i
        self.header = (len(toks), rbp, ra, rbx)

    def _cells(self, toks):
        n, rbp, ra, rbx = self.header
        if len(toks) != n:
            return None
        return (toks[1],
                toks[rbp] if rbp is not None else None,
                toks[ra] if ra is not None else None,
                toks[rbx] if rbx is not None else None)

    def _check(self, fde, loc, cells):
        if not (fde.start <= loc < fde.end):
            return
        self.fde_locs.append(loc)
        self.fde_cells.append(cells)
        if cells is None:
            fde.unchecked += 1
            return
        row_addr, rest = self.table.lookup(loc)
        self._judge(fde, loc, cells, row_addr, rest)

    def _judge(self, fde, loc, cells, row_addr, rest, ours=False):
        if "exp" in (cells[0], cells[1]):
            if self.raw is None:
                self.deferred.append((fde, loc, cells, row_addr, rest, ours))
                return
            raw = self.raw.get(fde.source)
            cfa, rbp = raw.lookup(fde.section, fde.offset, loc) if raw else (None, None)
            cells = (("exp:%s" % cfa) if cells[0] == "exp" else cells[0],
                     ("exp:%s" % rbp) if cells[1] == "exp" else cells[1]) + tuple(cells[2:])
        bad = compare_row(cells, rest, "S" in fde.aug)
        if fde.rows is not None:
            fde.rows.append((loc, bad and (loc, cells, row_addr, rest, bad), ours))
            return
        fde.n_checked += 1
        fde.ours_checked += ours
        if bad:
            fde.mismatches.append((loc, cells, row_addr, rest, bad))

    def _flush_pending(self):
        # readelf prints a row at every advance, so two rows can share a LOC
        # (advance by 0); only the last one is the rule in force there.
        if self.pending is not None:
            loc, cells = self.pending
            self.pending = None
            self._check(self.cur_fde, loc, cells)

    def _check_our_boundaries(self, fde):
        """The other way round: every row of ours starting inside the FDE
        (where readelf has no row of its own) against readelf's row in force
        there. Two step functions agree everywhere iff they agree at every
        boundary of either, so an extra, split or misplaced row of ours
        shows up here even when all of readelf's rows matched."""
        t = self.table
        i = bisect.bisect_left(t.addrs, fde.start)
        j = bisect.bisect_left(t.addrs, fde.end)
        if t.addrs[i:j] == self.fde_locs:
            return  # the usual case: the same boundaries, all judged above
        for k in range(i, j):
            a = t.addrs[k]
            n = bisect.bisect_right(self.fde_locs, a) - 1
            if n < 0 or self.fde_locs[n] == a:
                continue  # judged above at readelf's own row
            cells = self.fde_cells[n]
            if cells is None:
                fde.unchecked += 1
                continue
            self._judge(fde, a, cells, a, t.rests[k], ours=True)

    def end_of_input(self):
        """Closes the last CIE/FDE block (its rows are checked or deferred)."""
        self._end_block()

    def read_debug_file(self, lines, path):
        """The separate debug file's .debug_frame, which `ehprof tables`
        reads where the file has no .debug_frame of its own (its header
        names it): fed like the file's own .debug_frame."""
        self._end_block()
        self.source, self.only = path, {".debug_frame"}
        for line in lines:
            self.feed(line)
        self._end_block()
        self.source, self.only, self.skipping = None, None, False

    def resolve(self, raws):
        """Judges the deferred "exp" rows with the raw dumps' expressions,
        {source: RawFrames} (source None: the file itself)."""
        self._end_block()
        self.raw = raws or {}
        deferred, self.deferred = self.deferred, []
        for d in deferred:
            self._judge(*d)

    # -- main entry -------------------------------------------------------

    def feed(self, line):
        c = line[:1]
        if c == "" or line == "\n":
            return
        if self.skipping and not line.startswith("Contents of the"):
            return
        if c in "0123456789abcdef":
            # Rows: 16-digit LOC then a space.  CIE/FDE lines could share
            # that prefix under 64-bit DWARF offsets, but only they carry
            # upper-case words.
            if line[16:17] == " " and self.header is not None \
                    and "FDE" not in line and "CIE" not in line:
                self._row(line)
                return
            m = RE_FDE.match(line)
            if m:
                self._fde(m)
                return
            m = RE_CIE.match(line)
            if m:
                self._end_block()
                self.cur_cie = (self.section, int(m.group(1), 16), m.group(2))
                self.cies[(self.section, self.cur_cie[1])] = (m.group(2), None)
                return
            if "ZERO terminator" in line:
                self._end_block()
                return
        elif line.startswith("   LOC"):
            self._set_header(split_row(line))
            return
        else:
            m = RE_SECTION.match(line)
            if m:
                self._end_block()
                self.section = m.group(1)
                self.skipping = self.only is not None and self.section not in self.only
                return
        if len(self.unparsed) < 50:
            self.unparsed.append(line.rstrip("\n"))

    def _row(self, line):
        toks = split_row(line)
        loc = int(toks[0], 16)
        cells = self._cells(toks)
        if self.cur_cie is not None:
            # CIE rows are the initial state; keep the last one for FDEs that
            # print nothing of their own.
            cie = self.cur_cie
            self.cies[(cie[0], cie[1])] = (cie[2], cells)
            return
        self.readelf_rows += 1
        self.fde_had_rows = True
        if self.pending is not None and self.pending[0] != loc:
            self._flush_pending()
        self.pending = (loc, cells)

    def _fde(self, m):
        self._end_block()
        off = int(m.group(1), 16)
        cie_off = int(m.group(2), 16)
        start, end = int(m.group(3), 16), int(m.group(4), 16)
        aug, cie_cells = self.cies.get((self.section, cie_off), ("", None))
        fde = Fde(self.section, off, start, end, aug)
        fde.source = self.source
        self.fdes.append(fde)
        self.cur_fde = fde
        self.cie_cells = cie_cells
        self.fde_had_rows = False

    def _end_block(self):
        fde = self.cur_fde
        if fde is not None:
            self._flush_pending()
            if not self.fde_had_rows:
                self.readelf_rows += 1
                if fde.start < fde.end:
                    cells = self.cie_cells
                    if cells is None:
                        # e.g. glibc's signal-trampoline CIE has no initial
                        # instructions, so readelf shows no state to compare.
                        fde.unchecked += 1
                    else:
                        self._check(fde, fde.start, cells)
            self._check_our_boundaries(fde)
        self.fde_locs, self.fde_cells = [], []
        self.cur_fde = None
        self.cur_cie = None
        self.header = None
        self.pending = None

    def finish(self, max_examples):
        self._end_block()
        res = {"readelf_rows": self.readelf_rows, "checked": 0, "mismatches": 0,
               "overlaps": 0, "overlap_rows": 0, "overlap_mismatches": 0,
               "unchecked": 0, "fdes": 0, "zero_length_fdes": 0,
               "ours_checked": 0, "rows_outside_fdes": 0,
               "debug_frame_rows_shadowed": 0, "examples": [],
               "unparsed_lines": self.unparsed[:10]}
        live = []
        for f in self.fdes:
            if f.start >= f.end:
                res["zero_length_fdes"] += 1
            else:
                live.append(f)
        res["fdes"] = len(live)

        overlapping = set()
        by_section = {}
        for f in live:
            by_section.setdefault(f.section, []).append(f)
        for fl in by_section.values():
            fl.sort(key=lambda f: (f.start, f.end))
            holder = None
            for f in fl:
                if holder is not None and f.start < holder.end:
                    overlapping.add(id(f))
                    overlapping.add(id(holder))
                if holder is None or f.end > holder.end:
                    holder = f
        res["overlaps"] = len(overlapping)

        # Merged .eh_frame coverage; .debug_frame rows inside it are not ours
        # to judge because the builder prefers .eh_frame there.
        merged = _merge((f.start, f.end) for f in live if f.rows is None)
        mstarts = [s for s, _ in merged]

        def eh_covered(a):
            i = bisect.bisect_right(mstarts, a) - 1
            return i >= 0 and a < merged[i][1]

        mism = []
        for f in live:
            if f.rows is not None:
                checked, bad, ours = 0, [], 0
                for loc, mm, by_ours in f.rows:
                    if eh_covered(loc):
                        res["debug_frame_rows_shadowed"] += 1
                        continue
                    checked += 1
                    ours += by_ours
                    if mm:
                        bad.append(mm)
            else:
                checked, bad, ours = f.n_checked, f.mismatches, f.ours_checked
            res["unchecked"] += f.unchecked
            if id(f) in overlapping:
                res["overlap_rows"] += checked
                res["overlap_mismatches"] += len(bad)
                continue
            res["checked"] += checked
            res["ours_checked"] += ours
            res["mismatches"] += len(bad)
            for mm in bad:
                if len(mism) < max_examples:
                    mism.append((f, mm))
        # Rows of ours where no FDE of either section says anything.
        # Only the rows in the gaps between merged FDE ranges are looked at.
        addrs, rests = self.table.addrs, self.table.rests
        gap_start = 0
        for s, e in _merge((f.start, f.end) for f in live) + [[1 << 64, 1 << 64]]:
            for k in range(bisect.bisect_left(addrs, gap_start), bisect.bisect_left(addrs, s)):
                if any(a <= addrs[k] < b for a, b in self.plt_ranges):
                    # aarch64's .plt has no CFI: its rows are made from
                    # the code (unwind_tables/a64_plt.cc), which readelf
                    # cannot judge; tests/a64_tables_test.cc does.
                    res["plt_rows"] = res.get("plt_rows", 0) + 1
                elif any(a <= addrs[k] < b for a, b in self.init_ranges):
                    # x86-64's .init/.fini have no CFI: rows from crti/crtn's
                    # code (unwind_tables/init_fini_rows.cc), judged by
                    # tests/init_fini_rows_test.cc.
                    res["init_fini_rows"] = res.get("init_fini_rows", 0) + 1
                elif rests[k] != "none" and any(a <= addrs[k] < b and min(s, b) - max(gap_start, a) <= 512
                                                for a, b in self.text_ranges):
                    # crtbegin's functions have no CFI: rows from their
                    # code (unwind_tables/crt_rows.cc) in a gap of .text,
                    # judged by tests/crt_rows_test.cc.
                    res["crt_rows"] = res.get("crt_rows", 0) + 1
                elif rests[k] != "none" and self.gopclntab:
                    # Go's functions have no FDE: their rows come from the
                    # pcsp tables of .gopclntab (unwind_tables/go_pclntab),
                    # which readelf does not read; GoPclntabTest.UnwindRows
                    # judges them against the linker's .debug_frame.
                    res["gopclntab_rows"] = res.get("gopclntab_rows", 0) + 1
                elif (rests[k] != "none" and self.entry is not None and "ra=undef" in rests[k]
                      and self.entry - 1 <= addrs[k] < self.entry + 64):
                    # A program's entry point without CFI (ld.so's _start,
                    # from the byte before it: execve's return looks the
                    # entry up at pc - 1) is the bottom of the stack: rows of ours
                    # (unwind_tables/entry_point_rows), judged by
                    # table_builder_test, which readelf has nothing for.
                    res["entry_point_rows"] = res.get("entry_point_rows", 0) + 1
                elif rests[k] != "none":
                    res["rows_outside_fdes"] += 1
                    res["mismatches"] += 1
                    if len(mism) < max_examples:
                        mism.append((Fde("-", 0, addrs[k], addrs[k], ""),
                                     (addrs[k], ("-", "-", "-"), addrs[k], rests[k],
                                      "row outside every FDE")))
            gap_start = e
        for f, (loc, cells, row_addr, rest, why) in mism:
            res["examples"].append({
                "loc": "%016x" % loc,
                "section": f.section,
                "fde_offset": "%08x" % f.offset,
                "fde_range": "%x..%x" % (f.start, f.end),
                "augmentation": f.aug,
                "readelf": {"cfa": cells[0], "rbp": cells[1], "ra": cells[2]},
                "ours": None if rest is None else "%016x %s" % (row_addr, rest),
                "differs": why,
            })
        return res


# --------------------------------------------------------------------------
# Per-file driver.
# --------------------------------------------------------------------------

def elf_kind(path):
    """None if usable, else a skip reason."""
    try:
        with open(path, "rb") as fh:
            hdr = fh.read(20)
    except OSError as e:
        return "unreadable: %s" % e.strerror
    if len(hdr) < 20 or hdr[:4] != b"\x7fELF":
        return "not ELF"
    endian = "<" if hdr[5] == 1 else ">"
    e_type, e_machine = struct.unpack(endian + "HH", hdr[16:20])
    if e_machine not in (EM_X86_64, EM_AARCH64) or hdr[4] != 2:
        # The profiler reads x86-64 and aarch64 (ELF64) only; ELFCLASS32
        # with EM_X86_64 is the x32 ABI.
        return "not x86-64 or aarch64 (e_machine=%d, class=%d)" % (e_machine, hdr[4])
    if e_type == ET_REL:
        # Relocatable objects are never mapped by a profiled process, and
        # their CFI addresses are section-relative until linked.
        return "relocatable object"
    if e_type == ET_CORE:
        return "core file"
    return None


def elf_entry(path):
    """A 64-bit little-endian ELF file's e_entry; None otherwise."""
    try:
        with open(path, "rb") as f:
            head = f.read(32)
    except OSError:
        return None
    if len(head) < 32 or head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
        return None
    return int.from_bytes(head[24:32], "little") or None


def plt_sections(path, env, names=r"\.plt"):
    """[start, end) of the file's sections named so (.plt; readelf -S)."""
    r = subprocess.run(["readelf", "-SW", path], capture_output=True, text=True, env=env,
                       errors="replace")
    out = []
    for m in re.finditer(r"\]\s+(?:%s)\s+\S+\s+([0-9a-f]+)\s+[0-9a-f]+\s+([0-9a-f]+)" % names, r.stdout):
        start, size = int(m.group(1), 16), int(m.group(2), 16)
        out.append((start, start + size))
    return out


def check_file(path, ehprof, max_examples=10, timeout=600):
    t0 = time.monotonic()
    res = {"file": path}
    why = elf_kind(path)
    if why:
        res.update(status="skipped", reason=why)
        return res

    # ehprof writes to a pipe we drain fully before streaming readelf; readelf
    # blocks on its own full pipe meanwhile, which costs little because the
    # Python side of readelf parsing is the bottleneck anyway.
    env = dict(os.environ, LC_ALL="C")
    try:
        ours = subprocess.Popen([ehprof, "tables", path], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, env=env)
    except OSError as e:
        # Typically the binary being relinked under a long --tree run.
        res.update(status="failed", reason="cannot run ehprof: %s" % e)
        return res
    # no-follow-links: following .gnu_debuglink is readelf's default, and the
    # linked debug file's CFI is not what `ehprof tables FILE` reads.
    # stderr goes to a file so a flood of warnings cannot block readelf
    # while we are still reading its stdout.
    relf_errf = tempfile.TemporaryFile()
    relf = subprocess.Popen(
        ["readelf", "--wide", "--debug-dump=no-follow-links",
         "--debug-dump=frames-interp", path],
        stdout=subprocess.PIPE, stderr=relf_errf, env=env,
        text=True, errors="replace", bufsize=1 << 20)
    try:
        out, err = ours.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        ours.kill()
        ours.communicate()
        out, err = None, b"timeout after %ds" % timeout
    table = None
    if out is not None and ours.returncode == 0:
        try:
            table = OurTable(out.decode("ascii", "replace"))
        except ValueError as e:
            err = ("unparsable ehprof output: %s" % e).encode()
    checker = ReadelfChecker(table or OurTable(""))
    first = (out or b"").decode("utf-8", "replace").split("\n", 1)[0]
    if re.search(r" rows from \S*\+plt\b", first):
        checker.plt_ranges = plt_sections(path, env)
    if re.search(r" rows from \S*\+init\b", first):
        checker.init_ranges = plt_sections(path, env, r"\.init|\.fini")
    if re.search(r" rows from \S*\+crt\b", first):
        checker.text_ranges = plt_sections(path, env, r"\.text")
    checker.gopclntab = bool(re.search(r" rows from \S*\+gopclntab\b", first))
    checker.entry = elf_entry(path)
    for line in relf.stdout:
        checker.feed(line)
    relf.wait()
    checker.end_of_input()
    header = re.match(r"# .*? rows from \S+ with (/.+)$", (out or b"").decode("utf-8", "replace")
                      .split("\n", 1)[0])
    if table is not None and header and os.path.isfile(header.group(1)):
        dbg = subprocess.Popen(["readelf", "--wide", "--debug-dump=no-follow-links",
                                "--debug-dump=frames-interp", header.group(1)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True,
                               errors="replace", bufsize=1 << 20)
        checker.read_debug_file(dbg.stdout, header.group(1))
        dbg.wait()
    raws = {}
    for source in {d[0].source for d in checker.deferred}:
        wanted = {(d[0].section, d[0].offset) for d in checker.deferred if d[0].source == source}
        raws[source] = readelf_exprs.raw_frames(source or path, env, wanted)
    checker.resolve(raws)
    relf_errf.seek(0)
    relf_err = relf_errf.read().decode("utf-8", "replace")
    relf_errf.close()
    r = checker.finish(max_examples)
    res["elapsed_s"] = round(time.monotonic() - t0, 3)

    # A file readelf shows no CFI for is skipped whatever ehprof said, since
    # refusing such a file is legitimate.
    if not checker.fdes:
        res.update(status="skipped", reason="no CFI in readelf output")
        return res
    if table is None:
        # Row checks against an empty table would only be noise.
        msg = (err or b"").decode("utf-8", "replace").strip().splitlines()
        res.update(status="failed", readelf_rows=r["readelf_rows"],
                   reason="ehprof rc=%s: %s" % (ours.returncode, msg[0] if msg else ""))
        return res
    res.update(r)
    res["ehprof_rows"] = len(table.addrs)
    if table.unsorted:
        res["ehprof_unsorted"] = True
    if relf.returncode != 0:
        res["readelf_stderr"] = relf_err.strip()[:500]
    res["status"] = "mismatch" if r["mismatches"] else "ok"
    return res


def format_result(res):
    f = res["file"]
    st = res["status"]
    if st == "skipped":
        return "%s: skipped (%s)" % (f, res["reason"])
    if st == "failed":
        return "%s: ehprof failed (%s)" % (f, res["reason"])
    line = "%s: readelf_rows=%d checked=%d (at our own boundaries %d) mismatches=%d overlaps=%d" % (
        f, res["readelf_rows"], res["checked"], res["ours_checked"], res["mismatches"],
        res["overlaps"])
    extra = []
    if res.get("overlap_mismatches"):
        extra.append("overlap_mismatches=%d" % res["overlap_mismatches"])
    if res.get("unchecked"):
        extra.append("unchecked=%d" % res["unchecked"])
    if res.get("ehprof_unsorted"):
        extra.append("EHPROF-OUTPUT-UNSORTED")
    if extra:
        line += " (" + " ".join(extra) + ")"
    return line


def format_examples(res):
    out = []
    for ex in res.get("examples", []):
        rd = ex["readelf"]
        out.append("  %s %s fde@%s [%s] aug=\"%s\": readelf cfa=%s rbp=%s ra=%s | ours: %s  <- %s" % (
            ex["loc"], ex["section"], ex["fde_offset"], ex["fde_range"],
            ex["augmentation"], rd["cfa"], rd["rbp"] or "absent", rd["ra"] or "absent",
            ex["ours"] or "(no row)", ex["differs"]))
    return out


def walk_elf_files(dirs):
    seen = set()

    def candidates(d):
        if not os.path.isdir(d):
            yield d   # a plain file named on the command line
            return
        # os.walk does not descend into symlinked directories; symlinked
        # files are resolved and deduplicated by realpath below.
        for root, _dirs, files in os.walk(d):
            for name in files:
                yield os.path.join(root, name)

    for d in dirs:
        for p in candidates(d):
            try:
                rp = os.path.realpath(p)
                if rp in seen or not os.path.isfile(rp):
                    continue
                seen.add(rp)
                with open(rp, "rb") as fh:
                    if fh.read(4) != b"\x7fELF":
                        continue
            except OSError:
                continue
            yield rp


def _check_for_pool(args):
    path, ehprof, max_examples, timeout = args
    try:
        return check_file(path, ehprof, max_examples, timeout)
    except Exception as e:  # keep one odd file from killing the sweep
        return {"file": path, "status": "failed", "reason": "checker error: %r" % e}


def run_tree(args):
    files = sorted(walk_elf_files(args.tree))
    results = []
    jobs = [(p, args.ehprof, args.max_examples, args.timeout) for p in files]
    # Processes, not threads: the readelf parsing is pure-Python CPU work.
    with concurrent.futures.ProcessPoolExecutor(max_workers=args.jobs) as ex:
        for res in ex.map(_check_for_pool, jobs, chunksize=1):
            results.append(res)
            if res["status"] in ("mismatch", "failed"):
                print(format_result(res), flush=True)
    n_mis = sum(1 for r in results if r["status"] == "mismatch")
    n_fail = sum(1 for r in results if r["status"] == "failed")
    n_skip = sum(1 for r in results if r["status"] == "skipped")
    judged = [r for r in results if r["status"] in ("ok", "mismatch")]
    print("TOTAL: files=%d files_with_mismatches=%d rows_checked=%d mismatches=%d "
          "(failed=%d skipped=%d overlaps=%d)" % (
              len(results), n_mis,
              sum(r["checked"] for r in judged),
              sum(r["mismatches"] for r in judged),
              n_fail, n_skip, sum(r["overlaps"] for r in judged)))
    if args.result:
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench"))
        import result_file
        result_file.write("readelf_tree", {
            "files": len(results), "files_judged": len(judged), "files_with_mismatches": n_mis,
            "failed": n_fail, "skipped": n_skip,
            "rows_checked": sum(r["checked"] for r in judged),
            "rows_checked_millions": round(sum(r["checked"] for r in judged) / 1e6, 2),
            "ours_checked": sum(r.get("ours_checked", 0) for r in judged),
            "gopclntab_rows": sum(r.get("gopclntab_rows", 0) for r in judged),
            "mismatches": sum(r["mismatches"] for r in judged)}, args.note, args.result)
    return results


def run_files(args):
    results = []
    for p in args.files:
        res = check_file(p, args.ehprof, args.max_examples, args.timeout)
        results.append(res)
        print(format_result(res))
        for l in format_examples(res):
            print(l)
        sys.stdout.flush()
    return results


# --------------------------------------------------------------------------
# Self test: the readelf parser and the matching rules, on canned text.
# --------------------------------------------------------------------------

_SAMPLE = """\
Contents of the .eh_frame section:


00000000 0000000000000014 00000000 CIE "zR" cf=1 df=-8 ra=16
   LOC           CFA      ra    
0000000000000000 rsp+8    u     

00000018 0000000000000014 0000001c FDE cie=00000000 pc=0000000000001000..0000000000001010

00000030 0000000000000014 00000000 CIE "zR" cf=1 df=-8 ra=16
   LOC           CFA      ra    
0000000000000000 rsp+8    c-8   

00000048 0000000000000024 0000001c FDE cie=00000030 pc=0000000000002000..0000000000002100
   LOC           CFA      rbx   rbp   ra    
0000000000002000 rsp+8    u     u     c-8   
0000000000002001 rsp+16   u     c-16  c-8   
0000000000002004 rbp+16   u     c-16  c-8   
0000000000002008 rbp+16   c-24  c-16  c-8   
0000000000002008 rbp+16   c-24  c-16  c-8   
0000000000002050 exp      r3 (rbx) c-16  c-8   
0000000000002060 rsp+8    u     u     c-8   
0000000000002100 rsp+8    u     u     c-8   

00000070 0000000000000014 00000044 FDE cie=00000030 pc=0000000000003000..0000000000003000

0000252c 0000000000000010 00000000 CIE "zRS" cf=1 df=-8 ra=16

00002540 0000000000000078 00000018 FDE cie=0000252c pc=0000000000004000..0000000000004010
   LOC           CFA      rbp   ra    
0000000000004000 exp      exp   exp   

00002580 0000000000000018 00000044 FDE cie=00000030 pc=0000000000005000..0000000000005020

00002598 0000000000000018 0000005c FDE cie=00000030 pc=0000000000005010..0000000000005030

000025b0 ZERO terminator

Contents of the .debug_frame section:


00000000 0000000000000014 ffffffff CIE "" cf=1 df=-8 ra=16
   LOC           CFA      ra    
0000000000000000 rsp+8    c-8   

00000018 000000000000009c 00000000 FDE cie=00000000 pc=0000000000002000..0000000000002010

00000030 000000000000009c 00000000 FDE cie=00000000 pc=0000000000006000..0000000000006010

"""

_OURS_GOOD = """\
# comment
0000000000001000 cfa=rsp+8 rbp=same ra=undef
0000000000001010 none
0000000000002000 cfa=rsp+8 rbp=same ra=cfa-8
0000000000002001 cfa=rsp+16 rbp=cfa-16 ra=cfa-8
0000000000002004 cfa=rbp+16 rbp=cfa-16 ra=cfa-8
0000000000002050 cfa=*(rsp+8)+8 rbp=cfa-16 ra=cfa-8
0000000000002060 cfa=rsp+8 rbp=undef ra=cfa-8
0000000000002100 none
0000000000004000 cfa=*(rsp+160) rbp=*(rsp+120) ra=other signal
0000000000004010 none
0000000000005000 cfa=rsp+8 rbp=same ra=cfa-8
0000000000005030 none
0000000000006000 cfa=rsp+8 rbp=same ra=cfa-8
0000000000006010 none
"""


# The raw dump (--debug-dump=frames) of _SAMPLE's expression FDEs.
_RAW = """\
Contents of the .eh_frame section:

00000030 0000000000000014 00000000 CIE
  Version:               1
  DW_CFA_def_cfa: r7 (rsp) ofs 8
  DW_CFA_offset: r16 (rip) at cfa-8

00000048 0000000000000024 0000001c FDE cie=00000030 pc=0000000000002000..0000000000002100
  DW_CFA_advance_loc: 1 to 0000000000002001
  DW_CFA_def_cfa_offset: 16
  DW_CFA_offset: r6 (rbp) at cfa-16
  DW_CFA_advance_loc: 3 to 0000000000002004
  DW_CFA_def_cfa_register: r6 (rbp)
  DW_CFA_advance_loc: 4 to 0000000000002008
  DW_CFA_offset: r3 (rbx) at cfa-24
  DW_CFA_remember_state
  DW_CFA_advance_loc1: 72 to 0000000000002050
  DW_CFA_def_cfa_expression (DW_OP_breg7 (rsp): 8; DW_OP_deref; DW_OP_plus_uconst: 8)
  DW_CFA_register: r3 (rbx) in r6 (rbp)
  DW_CFA_advance_loc: 16 to 0000000000002060
  DW_CFA_restore_state
  DW_CFA_def_cfa: r7 (rsp) ofs 8
  DW_CFA_restore: r6 (rbp)

0000252c 0000000000000010 00000000 CIE

00002540 0000000000000078 00000018 FDE cie=0000252c pc=0000000000004000..0000000000004010
  DW_CFA_def_cfa_expression (DW_OP_breg7 (rsp): 160; DW_OP_deref)
  DW_CFA_expression: r6 (rbp) (DW_OP_breg7 (rsp): 120)
  DW_CFA_expression: r16 (rip) (DW_OP_breg7 (rsp): 168)
"""


def self_test():
    raw = readelf_exprs.RawFrames()
    raw.feed_all(_RAW.splitlines())

    def run(ours_text):
        ck = ReadelfChecker(OurTable(ours_text))
        for line in _SAMPLE.splitlines(True):
            ck.feed(line)
        ck.resolve({None: raw})
        return ck.finish(100)

    r = run(_OURS_GOOD)
    assert r["unparsed_lines"] == [], r["unparsed_lines"]
    # printed FDE rows: 8 + 1; no-row FDEs: 1000, 3000(zero len), 5000, 5010,
    # debug 2000, debug 6000
    assert r["readelf_rows"] == 9 + 6, r
    assert r["zero_length_fdes"] == 1, r
    assert r["overlaps"] == 2, r
    # .debug_frame's 2000 row, and ours at 2001 and 2004 judged against it.
    assert r["debug_frame_rows_shadowed"] == 3, r
    # 1000; 2000,2001,2004,2008,2050,2060 (2100 is at END); 4000; 6000
    assert r["checked"] == 9, r
    assert r["mismatches"] == 0, r["examples"]
    assert r["unchecked"] == 0, r

    def mism(old, new):
        assert old in _OURS_GOOD, old
        rr = run(_OURS_GOOD.replace(old, new))
        return [(e["loc"][-4:], e["differs"]) for e in rr["examples"]]

    assert mism("2001 cfa=rsp+16", "2001 cfa=rsp+24") == [("2001", "cfa")]
    assert mism("2004 cfa=rbp+16 rbp=cfa-16", "2004 cfa=rbp+16 rbp=same") == \
        [("2004", "rbp"), ("2008", "rbp")]
    assert mism("4000 cfa=*(rsp+160) rbp=*(rsp+120) ra=other signal",
                "4000 cfa=*(rsp+160) rbp=*(rsp+120) ra=other") == [("4000", "signal")]
    # Expressions are decoded and compared, not accepted in any of our forms.
    assert mism("4000 cfa=*(rsp+160)", "4000 cfa=expr") == [("4000", "cfa")]
    assert mism("rbp=*(rsp+120)", "rbp=*(rsp+128)") == [("4000", "rbp")]
    assert mism("2050 cfa=*(rsp+8)+8", "2050 cfa=plt") == [("2050", "cfa")]
    # Both ways: a row of ours between readelf's rows is judged against
    # readelf's rule in force there (a split with the same rule agrees)...
    row_2001 = "0000000000002001 cfa=rsp+16 rbp=cfa-16 ra=cfa-8\n"
    assert mism(row_2001, row_2001 + row_2001.replace("2001", "2002")) == []
    assert mism(row_2001, row_2001 + "0000000000002002 cfa=rsp+24 rbp=cfa-16 ra=cfa-8\n") == \
        [("2002", "cfa")]
    assert mism(row_2001, row_2001 + "0000000000002003 none\n") == [("2003", "none")]
    # ...and a row where no FDE says anything is an error too.
    assert mism("0000000000006010 none", "0000000000006010 cfa=rsp+8 rbp=same ra=cfa-8") == \
        [("6010", "row outside every FDE")]
    # ...unless the table says it has Go's .gopclntab rows: counted apart.
    ck = ReadelfChecker(OurTable(_OURS_GOOD.replace("0000000000006010 none",
                                                    "0000000000006010 cfa=rsp+8 rbp=same ra=cfa-8")))
    ck.gopclntab = True
    for line in _SAMPLE.splitlines(True):
        ck.feed(line)
    ck.resolve({None: raw})
    rg = ck.finish(100)
    assert rg["mismatches"] == 0 and rg.get("gopclntab_rows") == 1, rg
    assert readelf_exprs.decode_cfa("DW_OP_breg6 (rbp): -8; DW_OP_deref; DW_OP_lit8; DW_OP_minus") \
        == "*(rbp-8)-8"
    assert readelf_exprs.decode_cfa("DW_OP_breg7 (rsp): 8; DW_OP_breg9 (r9): 0; DW_OP_plus") == "expr"
    assert mism("1000 cfa=rsp+8 rbp=same ra=undef",
                "1000 cfa=rsp+8 rbp=same ra=cfa-8") == [("1000", "ra")]
    assert mism("2050 cfa=*(rsp+8)+8", "2050 cfa=rsp+8") == [("2050", "cfa")]
    # Dropping a boundary makes the earlier row govern.
    assert mism("0000000000002004 cfa=rbp+16 rbp=cfa-16 ra=cfa-8\n", "") == \
        [("2004", "cfa"), ("2008", "cfa")]
    assert mism("0000000000006000 cfa=rsp+8", "0000000000006000 none") == [("6000", "none")]
    # Overlapping FDEs never produce mismatches, only the overlap count.
    assert mism("0000000000005000 cfa=rsp+8", "0000000000005000 cfa=rsp+16") == []
    # rbx, in rows that say it (files with a CFA based on rbx).
    row_2004 = "0000000000002004 cfa=rbp+16 rbp=cfa-16 ra=cfa-8\n"
    tracked = row_2004.replace("\n", " rbx=same\n") + "0000000000002008 cfa=rbp+16 rbp=cfa-16 ra=cfa-8 rbx=cfa-24\n"
    assert mism(row_2004, tracked) == []
    assert mism(row_2004, tracked.replace("cfa-24", "cfa-32")) == [("2008", "rbx")]
    assert mism(row_2004, row_2004.replace("\n", " rbx=same\n")) == [("2008", "rbx")]
    assert split_row("0 rsp+8 u r3 (rbx) r10 (r10) c-8") == \
        ["0", "rsp+8", "u", "r3 (rbx)", "r10 (r10)", "c-8"]
    assert match_cfa("rsp-8", "rsp+-8") is None
    assert match_rbp("v+16", "other") is None
    assert match_rbp("r3 (rbx)", "other") is None
    assert match_ra("r5 (rdi)", "rdi") is None  # glibc's __vfork
    assert match_ra("r5 (rdi)", "rsi") == "ra"
    assert match_rbp("exp:*(rbp+0)", "*(rbp+0)") is None
    assert match_rbp("exp", "*(rbp+0)") == "rbp"
    assert match_ra("c+8", "cfa+8") is None
    assert match_ra("c-8", "cfa-16") == "ra"
    print("self-test OK")
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ehprof", help="path to the ehprof binary")
    ap.add_argument("--tree", nargs="+", metavar="DIR",
                    help="check every ELF file under these directories")
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--json", metavar="OUT", help="write all per-file results here")
    ap.add_argument("--max-examples", type=int, default=10)
    ap.add_argument("--timeout", type=int, default=600,
                    help="seconds allowed for one `ehprof tables` run")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--result", metavar="JSON",
                    help="with --tree: write the totals as a bench result (bench/results/readelf_tree.json)")
    ap.add_argument("--note", default="", help="said in the --result file")
    ap.add_argument("files", nargs="*")
    args = ap.parse_args(argv)

    if args.self_test:
        return self_test()
    if not args.ehprof:
        ap.error("--ehprof is required")
    if bool(args.tree) == bool(args.files):
        ap.error("give either FILE... or --tree DIR...")
    if not (os.path.isfile(args.ehprof) and os.access(args.ehprof, os.X_OK)):
        ap.error("--ehprof %s is not an executable file" % args.ehprof)
    if shutil.which("readelf") is None:
        ap.error("readelf (binutils) not found on PATH")

    results = run_tree(args) if args.tree else run_files(args)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results, fh, indent=1)
    bad = any(r["status"] in ("mismatch", "failed") for r in results)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
