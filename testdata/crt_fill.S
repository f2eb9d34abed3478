/* libcrt_fill.so: code without CFI after a linker's zero fill, as in
 * libLLVM-14, where crtbegin's functions follow a function whose FDE ends
 * at a call that does not return and zero bytes pad to the next 16-byte
 * boundary. td_fill_dtors has __do_global_dtors_aux's shape (push %rbp,
 * mov %rsp,%rbp, a call, pop %rbp, ret) and no CFI (crt_rows_test). */
	.text
	.globl	td_fill_fail
	.type	td_fill_fail, @function
td_fill_fail:
	.cfi_startproc
	subq	$8, %rsp
	.cfi_def_cfa_offset 16
	call	abort@PLT
	.cfi_endproc
	.size	td_fill_fail, .-td_fill_fail

	.p2align 4, 0
	.globl	td_fill_dtors
	.type	td_fill_dtors, @function
td_fill_dtors:
	cmpb	$0, td_fill_done(%rip)
	jne	1f
	pushq	%rbp
	movq	%rsp, %rbp
	call	td_fill_fail
	popq	%rbp
1:	ret
	.size	td_fill_dtors, .-td_fill_dtors

	.local	td_fill_done
	.comm	td_fill_done, 1, 1
	.section .note.GNU-stack,"",@progbits
