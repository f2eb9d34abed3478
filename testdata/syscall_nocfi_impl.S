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
	.section .note.GNU-stack, "", @progbits
