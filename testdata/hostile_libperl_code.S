/* libperl-hostile.so's copies of the three libperl functions ehprof reads
 * offsets from (agent/perl/perl_probe.h): the instruction sequences
 * Debian 12's perl 5.36 has for them, so the fake passes the probes and
 * its lying contexts reach the walk (tests/hostile_perl_priv_test.cc). */
	.text
	.globl	Perl_ckwarn
	.type	Perl_ckwarn, @function
Perl_ckwarn:
	mov	0xd0(%rdi), %rax
	test	%rax, %rax
	je	1f
	cmpq	$0x0, 0x40(%rax)
1:	xor	%eax, %eax
	ret
	.size	Perl_ckwarn, .-Perl_ckwarn

	.globl	Perl_pp_leavesub
	.type	Perl_pp_leavesub, @function
Perl_pp_leavesub:
	push	%rbp
	push	%rbx
	mov	0xe0(%rdi), %rdx
	movslq	0x20(%rdx), %rax
	lea	(%rax,%rax,2), %rcx
	lea	(%rax,%rcx,4), %rcx
	mov	0x8(%rdx), %rax
	lea	(%rax,%rcx,8), %rbp
	mov	%rdi, %rbx
	mov	0x48(%rbp), %rsi
	movq	$0x0, 0x48(%rbp)
	mov	0x10(%rbp), %rax
	mov	%rax, 0xd0(%rbx)
	mov	0x30(%rbp), %rdx
	mov	%rdx, %rax
	pop	%rbx
	pop	%rbp
	ret
	.size	Perl_pp_leavesub, .-Perl_pp_leavesub

	.globl	Perl_caller_cx
	.type	Perl_caller_cx, @function
Perl_caller_cx:
	mov	0xe0(%rdi), %r11
	mov	0x10(%r11), %r11
	mov	%r11, %rax
	ret
	.size	Perl_caller_cx, .-Perl_caller_cx
	.section	.note.GNU-stack,"",@progbits
