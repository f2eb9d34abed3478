/* What differs between the x86-64 and the arm64 user walk; everything else
 * is shared. The walker keeps registers in x86-64's DWARF slots: sp in
 * EHP_REG_RSP, the frame register (rbp, x29) in EHP_REG_RBP, pc in
 * EHP_REG_RIP, and on arm64 the link register x30 in EHP_SLOT_LR; a rule's
 * DWARF register goes through ehp_reg_slot. Also the user ABI's register
 * layout (struct ehp_user_regs: a perf_event's context, the head of the
 * kernel's pt_regs), its user-mode test and where a syscall's mmap
 * arguments are (bpf/proc_learn.bpf.h). Built with -D__TARGET_ARCH_x86
 * or -D__TARGET_ARCH_arm64 (bpf/CMakeLists.txt). Included before
 * bpf/maps.bpf.h. */
#ifndef EHPROF_BPF_ARCH_BPF_H_
#define EHPROF_BPF_ARCH_BPF_H_

#if defined(__TARGET_ARCH_arm64)

/* A macro, not a typedef: CO-RE relocates by the kernel's type names. */
#define ehp_sigcontext struct sigcontext
#define EHP_SLOT_LR EHP_REG_RAX /* x30; no other arm64 register uses slot 0 */

/* The registers at the start of a perf_event program's context
 * (bpf_user_pt_regs_t) and of the kernel's struct pt_regs: arm64's user
 * ABI struct user_pt_regs (arch/arm64/include/uapi/asm/ptrace.h). Read
 * without CO-RE, as on x86-64. */
struct ehp_user_regs {
	__u64 regs[31];
	__u64 sp, pc, pstate;
};
_Static_assert(sizeof(struct ehp_user_regs) == 34 * 8, "arm64 user_pt_regs is 34 words");
/* User mode: pstate's mode bits say EL0t (PSR_MODE_EL0t, 0). */
#define EHP_MODE_FIELD pstate
#define EHP_USER_MODE(pstate) (((pstate) & 0xf) == 0)
/* mmap's arguments, as the task entered the syscall: x0..x5 (x0, addr,
 * holds the return value by sys_exit; the rest are kept). */
#define EHP_MMAP_LEN(r) ((r)->regs[1])
#define EHP_MMAP_PROT(r) ((r)->regs[2])
#define EHP_MMAP_FLAGS(r) ((r)->regs[3])
#define EHP_MMAP_FD(r) ((r)->regs[4])
#define EHP_MMAP_OFF(r) ((r)->regs[5])

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

/* The registers at the start of a perf_event program's context
 * (bpf_user_pt_regs_t) and of the kernel's struct pt_regs: x86-64's user
 * ABI struct pt_regs (arch/x86/include/uapi/asm/ptrace.h), the same layout
 * on every kernel. Declared here, outside vmlinux.h, so reads through it
 * are plain loads at fixed offsets and never CO-RE relocations: the
 * kernel's own struct pt_regs is what vmlinux.h describes, and its fields
 * change type across kernels (since 6.9 `cs` is a u16 inside the FRED
 * union; on 6.1 an unsigned long, so an 8-byte read relocated against
 * 6.9+ BTF fails to load there). */
struct ehp_user_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	__u64 ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};
_Static_assert(sizeof(struct ehp_user_regs) == 21 * 8, "x86-64 user pt_regs is 21 words");
_Static_assert(__builtin_offsetof(struct ehp_user_regs, cs) == 136,
	       "cs sits at 136 in the user ABI");
/* User mode: cs's privilege level is 3. */
#define EHP_MODE_FIELD cs
#define EHP_USER_MODE(cs) (((cs) & 3) == 3)
/* mmap's arguments, as the task entered the syscall (the syscall ABI:
 * rdi, rsi, rdx, r10, r8, r9). */
#define EHP_MMAP_LEN(r) ((r)->si)
#define EHP_MMAP_PROT(r) ((r)->dx)
#define EHP_MMAP_FLAGS(r) ((r)->r10)
#define EHP_MMAP_FD(r) ((r)->r8)
#define EHP_MMAP_OFF(r) ((r)->r9)

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

/* A return address in a general register (EHP_RULE_REGISTER: glibc's
 * __vfork pops it into rdi around the syscall), when that register is
 * known: in the leaf's frame. */
EHP_INLINE int ehp_ra_in_register(__u64 *regs, __u32 valid, struct ehp_rule *rule, __u64 *ra)
{
	__u32 reg = (__u16)rule->ra_offset;
	if (rule->ra_kind != EHP_RULE_REGISTER || reg >= EHP_REG_RIP || !(valid & (1u << reg)))
		return 0;
	*ra = regs[reg];
	return 1;
}

EHP_INLINE __u64 ehp_strip_pac(__u64 ra)
{
	return ra;
}

#endif

#endif /* EHPROF_BPF_ARCH_BPF_H_ */
