/* What differs between the x86-64 and the arm64 user walk; everything else
 * is shared. The walker keeps registers in x86-64's DWARF slots: sp in
 * EHP_REG_RSP, the frame register (rbp, x29) in EHP_REG_RBP, pc in
 * EHP_REG_RIP, and on arm64 the link register x30 in EHP_SLOT_LR; a rule's
 * DWARF register goes through ehp_reg_slot. Built with -D__TARGET_ARCH_x86
 * or -D__TARGET_ARCH_arm64 (bpf/CMakeLists.txt). Included before
 * bpf/maps.bpf.h. */
#ifndef EHPROF_BPF_ARCH_BPF_H_
#define EHPROF_BPF_ARCH_BPF_H_

#if defined(__TARGET_ARCH_arm64)

/* A macro, not a typedef: CO-RE relocates by the kernel's type names. */
#define ehp_sigcontext struct sigcontext
#define EHP_SLOT_LR EHP_REG_RAX /* x30; no other arm64 register uses slot 0 */

/* From a struct pt_regs (its user_pt_regs part) or a struct sigcontext:
 * both have regs[31], sp, pc. */
#define EHP_LOAD_GPRS(dst, src)                                                                    \
	do {                                                                                       \
		(dst)[EHP_REG_RSP] = (src)->sp;                                                   \
		(dst)[EHP_REG_RBP] = (src)->regs[EHP_A64_REG_X29];                                \
		(dst)[EHP_SLOT_LR] = (src)->regs[EHP_A64_REG_X30];                                \
		(dst)[EHP_REG_RIP] = (src)->pc;                                                   \
	} while (0)
#define EHP_SIG_PC(sc) ((sc)->pc)
/* __kernel_rt_sigreturn (the vDSO's, CIE 'S') runs with sp at the struct
 * rt_sigframe: siginfo, then the ucontext. */
#define EHP_SIGFRAME_MCONTEXT                                                                      \
	(__builtin_offsetof(struct rt_sigframe, uc) + __builtin_offsetof(struct ucontext, uc_mcontext))
/* Not inside a syscall: pt_regs.syscallno is NO_SYSCALL (-1). */
#define EHP_NOT_IN_SYSCALL(r) ((r)->syscallno < 0)
#define EHP_SYSCALL_NR(r) ((r)->syscallno)
#define EHP_ARCH_NR_MMAP 222 /* asm-generic */

EHP_INLINE __u32 ehp_reg_slot(__u32 reg)
{
	switch (reg) {
	case EHP_A64_REG_SP:
		return EHP_REG_RSP;
	case EHP_A64_REG_X29:
		return EHP_REG_RBP;
	case EHP_A64_REG_X30:
		return EHP_SLOT_LR;
	default:
		return 255; /* not tracked: the rule is unsupported */
	}
}

/* A return address still in x30 (leaf code, prologues: ra=x30), known
 * while x30 is: in the interrupted frame or after a signal frame. */
EHP_INLINE int ehp_ra_in_register(__u64 *regs, __u32 valid, struct ehp_rule *rule, __u64 *ra)
{
	if (rule->ra_kind != EHP_RULE_SAME || !(valid & (1u << EHP_SLOT_LR)))
		return 0;
	*ra = regs[EHP_SLOT_LR];
	return 1;
}

/* Return addresses signed with PAC carry the signature above the user
 * virtual address bits (48 with 4 KiB pages; a process would have to ask
 * for more with mmap hints). Stripping needs no key and leaves an unsigned
 * address unchanged, so every return address goes through it. */
#define EHP_USER_VA_MASK ((1ull << 48) - 1)
EHP_INLINE __u64 ehp_strip_pac(__u64 ra)
{
	return ra & EHP_USER_VA_MASK;
}

#else /* x86-64 */

#define ehp_sigcontext struct sigcontext_64

/* The general registers into regs (DWARF numbering) from a struct pt_regs
 * or a struct sigcontext_64: the kernel names their fields alike. */
#define EHP_LOAD_GPRS(dst, src)                                                                    \
	do {                                                                                       \
		(dst)[EHP_REG_RAX] = (src)->ax;                                                   \
		(dst)[EHP_REG_RDX] = (src)->dx;                                                   \
		(dst)[EHP_REG_RCX] = (src)->cx;                                                   \
		(dst)[EHP_REG_RBX] = (src)->bx;                                                   \
		(dst)[EHP_REG_RSI] = (src)->si;                                                   \
		(dst)[EHP_REG_RDI] = (src)->di;                                                   \
		(dst)[EHP_REG_RBP] = (src)->bp;                                                   \
		(dst)[EHP_REG_RSP] = (src)->sp;                                                   \
		(dst)[EHP_REG_R8] = (src)->r8;                                                    \
		(dst)[EHP_REG_R8 + 1] = (src)->r9;                                                \
		(dst)[EHP_REG_R8 + 2] = (src)->r10;                                               \
		(dst)[EHP_REG_R8 + 3] = (src)->r11;                                               \
		(dst)[EHP_REG_R8 + 4] = (src)->r12;                                               \
		(dst)[EHP_REG_R8 + 5] = (src)->r13;                                               \
		(dst)[EHP_REG_R8 + 6] = (src)->r14;                                               \
		(dst)[EHP_REG_R8 + 7] = (src)->r15;                                               \
		(dst)[EHP_REG_RIP] = (src)->ip;                                                   \
	} while (0)
#define EHP_SIG_PC(sc) ((sc)->ip)
/* __restore_rt runs on the rt_sigframe with its return address (pretcode)
 * popped, so rsp points at its struct ucontext. */
#define EHP_SIGFRAME_MCONTEXT __builtin_offsetof(struct ucontext, uc_mcontext)
/* Inside a syscall orig_ax holds its number, not -1. */
#define EHP_NOT_IN_SYSCALL(r) ((__s64)(r)->orig_ax < 0)
#define EHP_SYSCALL_NR(r) ((r)->orig_ax)
#define EHP_ARCH_NR_MMAP 9

EHP_INLINE __u32 ehp_reg_slot(__u32 reg)
{
	return reg;
}

EHP_INLINE int ehp_ra_in_register(__u64 *regs, __u32 valid, struct ehp_rule *rule, __u64 *ra)
{
	return 0; /* x86-64's return address is always on the stack */
}

EHP_INLINE __u64 ehp_strip_pac(__u64 ra)
{
	return ra;
}

#endif

#endif /* EHPROF_BPF_ARCH_BPF_H_ */
