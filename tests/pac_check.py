#!/usr/bin/env python3
"""Checks the PAC state of `ehprof tables FILE` rows against the code itself
(aarch64): readelf does not show DW_CFA_AARCH64_negate_ra_state's effect,
so the reference is the instructions that sign and authenticate the return
address. After every paciasp/pacibsp the row in force must say "pac"; after
every autiasp/autibsp it must not (GCC puts the negate right after each).

Clang-built code (libLLVM) has synchronous CFI: the frame's whole rule,
the negate included, comes after the prologue, and epilogues have none.
There the rows disagree with the code while agreeing with readelf; those
two shapes are counted apart (cfi_late: signed while the row still has the
return address in x30; no_epilogue_cfi: authenticated while the row still
has it on the stack) and do not fail: the walker strips the PAC bits of
every return address, so the flag does not steer the walk. Any other
disagreement fails.

    pac_check.py --ehprof build/ehprof FILE...   # prints one JSON line per file

Exit status 1 on any disagreement. Standard library only.
"""
import argparse
import bisect
import json
import struct
import subprocess
import sys

SIGN = {0xd503233f: "paciasp", 0xd503237f: "pacibsp"}
AUTH = {0xd50323bf: "autiasp", 0xd50323ff: "autibsp"}


def loads(path):
    """(vaddr, offset, filesz) of each PT_LOAD, and the file's bytes."""
    data = open(path, "rb").read()
    phoff, = struct.unpack_from("<Q", data, 32)
    phentsize, phnum = struct.unpack_from("<HH", data, 54)
    out = []
    for i in range(phnum):
        p_type, _, p_offset, p_vaddr, _, p_filesz = struct.unpack_from(
            "<IIQQQQ", data, phoff + i * phentsize)
        if p_type == 1:
            out.append((p_vaddr, p_offset, p_filesz))
    return out, data


def check(path, ehprof):
    text = subprocess.run([ehprof, "tables", path], capture_output=True, text=True,
                          check=True).stdout
    addrs, pac, none, ra_in_x30 = [], [], [], []
    for line in text.splitlines():
        if not line or line[0] == "#":
            continue
        a, _, rest = line.partition(" ")
        toks = rest.split()
        addrs.append(int(a, 16))
        pac.append("pac" in toks)
        none.append(toks == ["none"])
        ra_in_x30.append("ra=x30" in toks)
    segs, data = loads(path)
    res = {"file": path, "sign_insns": 0, "auth_insns": 0, "pac_rows": sum(pac),
           "mismatches": 0, "cfi_late": 0, "no_epilogue_cfi": 0, "examples": []}

    def row_at(addr):
        i = bisect.bisect_right(addrs, addr) - 1
        return None if i < 0 or none[i] else i

    for vaddr, off, size in segs:
        for a in range(vaddr + (-vaddr % 4), vaddr + size - 3, 4):
            insn, = struct.unpack_from("<I", data, off + a - vaddr)
            kind = SIGN.get(insn) or AUTH.get(insn)
            if not kind:
                continue
            i = row_at(a + 4)
            if i is None:
                continue  # no CFI covers it (hand-written code)
            want = insn in SIGN
            res["sign_insns" if want else "auth_insns"] += 1
            if pac[i] != want:
                if want and ra_in_x30[i]:
                    res["cfi_late"] += 1
                    continue
                if not want and not ra_in_x30[i]:
                    res["no_epilogue_cfi"] += 1
                    continue
                res["mismatches"] += 1
                if len(res["examples"]) < 5:
                    res["examples"].append("%x %s: row %x %s" % (
                        a, kind, addrs[i], "pac" if pac[i] else "not pac"))
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ehprof", required=True)
    ap.add_argument("files", nargs="+")
    a = ap.parse_args()
    bad = 0
    for f in a.files:
        r = check(f, a.ehprof)
        bad += r["mismatches"]
        print(json.dumps(r))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
