/* rbx_frame(fn): calls fn with its CFA based on rbx, as ld.so's
 * _dl_runtime_resolve does while _dl_fixup runs (push %rbx; mov %rsp,%rbx;
 * realign rsp; CFA = rbx+16). A walk from below it needs the caller's rbx
 * at this frame: rbx_saver, between them, saved it and used it for
 * something else, so the leaf's rbx is not it. */
	.text
	.globl rbx_frame
	.type rbx_frame, @function
rbx_frame:
	.cfi_startproc
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbx, 0
	mov %rsp, %rbx
	.cfi_def_cfa_register %rbx
	and $-64, %rsp
	sub $192, %rsp
	call rbx_saver
	mov %rbx, %rsp
	.cfi_def_cfa_register %rsp
	pop %rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	ret
	.cfi_endproc
	.size rbx_frame, .-rbx_frame

/* rbx_saver(fn): saves rbx below some other saves, clobbers it, calls fn. */
	.globl rbx_saver
	.type rbx_saver, @function
rbx_saver:
	.cfi_startproc
	push %r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %r12, 0
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbx, 0
	sub $8, %rsp
	.cfi_adjust_cfa_offset 8
	mov %rdi, %r12
	mov $0x5eed, %ebx
	call *%r12
	add $8, %rsp
	.cfi_adjust_cfa_offset -8
	pop %rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore %rbx
	pop %r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore %r12
	ret
	.cfi_endproc
	.size rbx_saver, .-rbx_saver
	.section .note.GNU-stack, "", @progbits
