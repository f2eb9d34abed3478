// AArch64 CFI cases for tests/a64_tables_test.cc, assembled and linked for
// aarch64 on any host (clang --target=aarch64-linux-gnu, aarch64-linux-gnu-ld):
// a PAC-signed function with an epilogue in the middle (remember/restore
// state), a frame bigger than s16 with its frame record at sp, a frame
// whose CFA is x29-based, _start's undefined return address, a leaf, and a
// call through the PLT.
	.text
	.p2align 2

	.globl	a64_leaf
	.type	a64_leaf, %function
a64_leaf:
	.cfi_startproc
	add	x0, x0, #1
	ret
	.cfi_endproc
	.size	a64_leaf, .-a64_leaf

	.globl	a64_pac
	.type	a64_pac, %function
a64_pac:
	.cfi_startproc
	hint	#25			// paciasp
	.cfi_negate_ra_state
	stp	x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov	x29, sp
	cbz	x0, 1f
	.cfi_remember_state
	ldp	x29, x30, [sp], #32
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	hint	#29			// autiasp
	.cfi_negate_ra_state
	ret
1:
	.cfi_restore_state
	bl	puts
	ldp	x29, x30, [sp], #32
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	hint	#29			// autiasp
	.cfi_negate_ra_state
	ret
	.cfi_endproc
	.size	a64_pac, .-a64_pac

	.globl	a64_big_frame
	.type	a64_big_frame, %function
a64_big_frame:
	.cfi_startproc
	sub	sp, sp, #192, lsl #12	// 786432 bytes
	.cfi_def_cfa_offset 786432
	sub	sp, sp, #16
	.cfi_def_cfa_offset 786448
	stp	x29, x30, [sp]
	.cfi_offset 29, -786448
	.cfi_offset 30, -786440
	mov	x29, sp
	bl	a64_leaf
	ldp	x29, x30, [sp]
	add	sp, sp, #16
	add	sp, sp, #192, lsl #12
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	a64_big_frame, .-a64_big_frame

	.globl	a64_fp_cfa
	.type	a64_fp_cfa, %function
a64_fp_cfa:
	.cfi_startproc
	stp	x29, x30, [sp, #-16]!
	.cfi_def_cfa_offset 16
	.cfi_offset 29, -16
	.cfi_offset 30, -8
	mov	x29, sp
	.cfi_def_cfa_register 29
	sub	sp, sp, x0
	bl	a64_leaf
	mov	sp, x29
	.cfi_def_cfa 31, 16
	ldp	x29, x30, [sp], #16
	.cfi_restore 30
	.cfi_restore 29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size	a64_fp_cfa, .-a64_fp_cfa

	.globl	_start
	.type	_start, %function
_start:
	.cfi_startproc
	.cfi_undefined x30
	mov	x29, #0
	mov	x30, #0
	bl	a64_pac
	b	.
	.cfi_endproc
	.size	_start, .-_start
