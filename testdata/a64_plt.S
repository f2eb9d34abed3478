// AArch64 PLT stubs for tests/elf_symbols_test.cc, linked for aarch64 on any
// host (testdata/CMakeLists.txt): calls through the PLT to functions of
// a64_plt_lib.so, linked with BTI landing pads in its PLT entries (an
// executable: "bti c; adrp; ldr; add; br; nop", 24 bytes) and with PAC
// (a shared object: "adrp; ldr; add; autia1716; br; nop"). Not run.
	.text
	.p2align 2
	.globl	_start
	.type	_start, %function
_start:
	bti	c
	bl	a64_puts
	bl	a64_printf
	bl	a64_exit
	ret
	.size	_start, .-_start

// GNU_PROPERTY_AARCH64_FEATURE_1_AND: BTI and PAC, so the linker makes
// BTI entries without warning that an input lacks the property.
	.section .note.gnu.property, "a"
	.p2align 3
	.word	4, 16, 5		// namesz, descsz, NT_GNU_PROPERTY_TYPE_0
	.asciz	"GNU"
	.word	0xc0000000, 4, 3, 0	// FEATURE_1_AND, 4 bytes, BTI | PAC, pad
