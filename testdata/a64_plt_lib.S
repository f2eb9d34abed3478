// The functions testdata/a64_plt.S calls through its PLT.
	.text
	.p2align 2
	.globl	a64_puts, a64_printf, a64_exit
	.type	a64_puts, %function
	.type	a64_printf, %function
	.type	a64_exit, %function
a64_puts:
a64_printf:
a64_exit:
	ret
