/* raw_getrandom(buf, len): a frameless syscall wrapper with no CFI at all,
 * as glibc's clone3 is past its FDE's end in the parent. A sample taken in
 * the syscall has its user pc right after `syscall`, the return address at
 * rsp, and (the callers built -fomit-frame-pointer) no frame pointer. */
	.text
	.globl raw_getrandom
	.type raw_getrandom, @function
raw_getrandom:
	xorl %edx, %edx
	movl $318, %eax /* getrandom */
	syscall
	ret
	.size raw_getrandom, .-raw_getrandom

/* rareg_getrandom(buf, len): a syscall wrapper that keeps its return
 * address in a register around the syscall, as glibc's __vfork does (pop
 * %rdi ... push %rdi; ret), with CFI saying so (DW_CFA_register rip, r8).
 * A sample taken in the syscall has its user pc right after `syscall`:
 * the return address is in r8, not on the stack. */
	.globl rareg_getrandom
	.type rareg_getrandom, @function
rareg_getrandom:
	.cfi_startproc
	pop %r8
	.cfi_adjust_cfa_offset -8
	.cfi_register 16, 8
	xorl %edx, %edx
	movl $318, %eax /* getrandom */
	syscall
	push %r8
	.cfi_adjust_cfa_offset 8
	.cfi_offset 16, -8
	ret
	.cfi_endproc
	.size rareg_getrandom, .-rareg_getrandom
	.section .note.GNU-stack, "", @progbits
