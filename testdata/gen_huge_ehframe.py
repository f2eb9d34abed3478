#!/usr/bin/env python3
"""Writes the assembly of huge_ehframe: PARTS files of PER_PART functions.

Every function has its own FDE with ten CFA changes (four pushes and a
stack adjustment, undone in the epilogue), so .eh_frame grows by about 60
bytes and the unwind table by 11 rows per function: 400,000 functions make
24 MB of .eh_frame and 4.4 million rows.  Two of them, huge_outer (a third
of the way in) and huge_inner (two thirds), call on to the next link of the
profiled chain main -> huge_outer -> huge_inner -> huge_leaf; the rest only
exist to be unwound past.

Several files, not one: GNU as holds a whole file's fragments in memory
(3.3 GB for 400,000 functions in one file, 0.4 GB for 50,000), and the parts
assemble in parallel.

Usage: gen_huge_ehframe.py PARTS PER_PART OUT_PREFIX
  writes OUT_PREFIX0.s ... OUT_PREFIX<PARTS-1>.s
"""

import sys

# A GNU as macro keeps the generated files small (~30 bytes a function).
# At the call the stack is 16-byte aligned: 8 (return address) + 4 pushes
# + 8.
MACRO = r"""	.macro HF name, body
	.type \name, @function
\name:
	.cfi_startproc
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbx, -16
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_offset %rbp, -24
	push %r12
	.cfi_adjust_cfa_offset 8
	.cfi_offset %r12, -32
	push %r13
	.cfi_adjust_cfa_offset 8
	.cfi_offset %r13, -40
	sub $8, %rsp
	.cfi_adjust_cfa_offset 8
	\body
	add $8, %rsp
	.cfi_adjust_cfa_offset -8
	pop %r13
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r13
	pop %r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r12
	pop %rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbp
	pop %rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	ret
	.cfi_endproc
	.size \name, .-\name
	.endm
"""


def main():
    parts, per_part, prefix = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    total = parts * per_part
    # The chain's links, by function index.
    chain = {total // 3: ("huge_outer", "huge_inner"),
             2 * total // 3: ("huge_inner", "huge_leaf")}
    for p in range(parts):
        lines = ["\t.text\n", MACRO]
        for i in range(p * per_part, (p + 1) * per_part):
            if i in chain:
                name, callee = chain[i]
                lines.append(f"\t.globl {name}\n")
                lines.append(f'HF {name}, "call {callee}"\n')
            else:
                lines.append(f'HF hf_{i}, "xor %eax, %eax"\n')
        lines.append('\t.section .note.GNU-stack,"",@progbits\n')
        with open(f"{prefix}{p}.s", "w") as f:
            f.writelines(lines)


if __name__ == "__main__":
    main()
