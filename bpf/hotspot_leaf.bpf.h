/* Where a compiled Java method interrupted at pc (the walk's leaf) keeps
 * its return address: HotSpot builds the frame in the prologue (the stack
 * bang mov [rsp-N],eax; push rbp; sub rsp,N) and takes it down in the
 * epilogue (add rsp,N; pop rbp; the return poll cmp rsp,[r15+X] and ja;
 * ret), and C1's and C2's small methods spend much of their time there,
 * where the frame size does not hold. The instruction at pc says how much
 * of the frame is on the stack. Included by bpf/hotspot.bpf.h. */
#ifndef EHPROF_BPF_HOTSPOT_LEAF_BPF_H_
#define EHPROF_BPF_HOTSPOT_LEAF_BPF_H_

/* How much of a compiled frame is on the stack (jvm_sized). */
#define JVM_FRAMED 0	/* all of it: the return address below sp + frame size */
#define JVM_RA_AT_SP 1	/* nothing: the return address at sp, rbp the caller's */
#define JVM_PUSHED 2	/* rbp pushed (and still in rbp): the return address at sp + 8 */
#define JVM_POPPING 3	/* only the caller's rbp, at sp: the return address above it */
#define JVM_RBP_LIVE 4	/* all of it, the caller's rbp not stored yet: still in rbp */

/* The layout at a leaf pc in an nmethod whose frame is complete from
 * offset `complete` of its code (st->insn holds the 8 bytes before pc and
 * the 8 at it). Before the frame is complete, an instruction that is none
 * of the prologue's is the inline-cache check (the return address at sp,
 * where the caller's code is) or the entry barrier (the frame built). */
EHP_INLINE __u32 jvm_leaf_layout(struct scratch *s, struct jvm_state *st, __u64 pc, int prologue)
{
	const __u8 *b = st->insn + 8, *before = st->insn;
	if (!jvm_read(pc - 8, st->insn, 16))
		return prologue ? JVM_RA_AT_SP : JVM_FRAMED;
	if (b[0] == 0xc3)
		return JVM_RA_AT_SP; /* ret */
	if (b[0] == 0x5d)
		return JVM_POPPING; /* pop rbp */
	if (b[0] == 0x49 && b[1] == 0x3b && (b[2] == 0x67 || b[2] == 0xa7))
		return JVM_RA_AT_SP; /* cmp rsp,[r15+X]: the return poll */
	if (b[0] == 0x0f && b[1] == 0x87 &&
	    ((before[4] == 0x49 && before[5] == 0x3b && before[6] == 0x67) ||
	     (before[1] == 0x49 && before[2] == 0x3b && before[3] == 0xa7)))
		return JVM_RA_AT_SP; /* its ja */
	if (!prologue)
		return JVM_FRAMED;
	if (b[0] == 0x55)
		return JVM_RA_AT_SP; /* push rbp */
	if (b[0] == 0x89 && b[1] == 0x84 && b[2] == 0x24 && (b[6] & 0x80))
		return JVM_RA_AT_SP; /* the stack bang, below sp */
	if (b[0] == 0x48 && (b[1] == 0x83 || b[1] == 0x81) && b[2] == 0xec)
		return before[7] == 0x55 ? JVM_PUSHED : JVM_RA_AT_SP; /* sub rsp,N */
	if (b[0] == 0x48 && b[1] == 0x89 && (b[2] == 0x6c || b[2] == 0xac) && b[3] == 0x24)
		return JVM_RBP_LIVE; /* mov [rsp+N],rbp after sub rsp,N */
	__u64 sp = s->regs[EHP_REG_RSP];
	if (jvm_read(sp, &st->ra, 8) && st->ra >= s->jvm_code[0] && st->ra < s->jvm_code[1])
		return JVM_RA_AT_SP;
	return JVM_FRAMED;
}

#endif /* EHPROF_BPF_HOTSPOT_LEAF_BPF_H_ */
