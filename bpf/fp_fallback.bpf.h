/* The frame-pointer fallback inside a mapping that has a table: a pc the
 * table has no row for (V8's embedded builtins in /usr/bin/node, whose
 * Builtins_JSEntryTrampoline sits between the JIT frames and node's C++;
 * Go functions in a cgo binary whose .eh_frame covers only the C parts) is
 * stepped through rbp when the frame pointer looks like one, and the walk
 * goes on with the caller's CFI. Included by bpf/walk.bpf.h after
 * fp_step_state. */
#ifndef EHPROF_BPF_FP_FALLBACK_BPF_H_
#define EHPROF_BPF_FP_FALLBACK_BPF_H_

/* The farthest rbp may lie above rsp and still be taken for this frame's
 * frame pointer: a thread's default stack size (8 MiB). */
#define EHP_FP_FALLBACK_MAX_FRAME (8ull << 20)

/* r12-r15 in s->valid (DWARF 12-15): callee-saved, as rbx and rbp. */
#define EHP_R12_R15_BITS (REG_BIT(12) | REG_BIT(13) | REG_BIT(14) | REG_BIT(15))

/* The return address of a frameless syscall wrapper without CFI: the leaf,
 * stopped in a syscall (its pc the instruction after `syscall`, not exact),
 * whose return address is still at rsp (glibc's clone3 in the parent: its
 * FDE ends before the `syscall`, as the child's half marks the stack's
 * bottom). Taken only where the frame pointer gave nothing: one step to a
 * return address in one of the process's executable mappings, rbp kept. */
EHP_INLINE int syscall_leaf_step(struct walk *w)
{
#if defined(__TARGET_ARCH_arm64)
	return -1; /* arm64's wrappers return through x30, not the stack */
#else
	struct scratch *s = w->s;
	__u64 sp, ra;
	if (w->n != 1 || s->exact || !slot_value(s, EHP_REG_RSP, &sp) || !read_stack_u64(s, sp, &ra) ||
	    !ra || !find_mapping(w->proc, ra - 1))
		return -1;
	/* The wrapper saved nothing: the callee-saved registers are the
	 * caller's. */
	s->regs[EHP_REG_RSP] = sp + 8;
	s->valid = (s->valid & (REG_BIT(EHP_REG_RBX) | REG_BIT(EHP_REG_RBP) | EHP_R12_R15_BITS)) |
		   REG_BIT(EHP_REG_RSP);
	s->pc = ra;
	s->exact = 0;
	w->last = 0;
	return push_frame(w, ra | EHP_FRAME_FP);
#endif
}

/* One step through rbp for a pc without CFI, or a stop reason saying why
 * not: rbp must be known, 8-byte aligned, at or above rsp and within
 * EHP_FP_FALLBACK_MAX_FRAME of it, and the return address it leads to must
 * lie in one of the process's executable mappings. Else a leaf in a
 * syscall may be a frameless wrapper's (syscall_leaf_step). */
EHP_INLINE int fp_fallback_step(struct walk *w)
{
	struct scratch *s = w->s;
	__u64 bp, sp, ra;
	if (!slot_value(s, EHP_REG_RBP, &bp) || !slot_value(s, EHP_REG_RSP, &sp) || (bp & 7) ||
	    bp < sp || bp - sp > EHP_FP_FALLBACK_MAX_FRAME) {
		int r = syscall_leaf_step(w);
		if (r >= 0)
			return r;
		w->stop = EHP_STOP_NO_CFI_BAD_FP;
		return 0;
	}
	if (!read_stack_u64(s, bp + 8, &ra)) {
		w->stop = EHP_STOP_READ_FAULT;
		return 0;
	}
	struct ehp_mapping *m = ra ? find_mapping(w->proc, ra - 1) : 0;
	if (!m) {
		int r = syscall_leaf_step(w);
		if (r >= 0)
			return r;
		/* JIT code in memory mapped since user space read the maps
		 * (V8's code space grows while a renderer starts): user space
		 * reads them again, and the walk is finished late
		 * (bpf/deferred.bpf.h). */
		if (ra)
			notify(EHP_EVENT_UNKNOWN_PC, w->pid, s->ev.tid, ra - 1);
		w->stop = EHP_STOP_FP_RA_UNMAPPED;
		return 0;
	}
	w->last = m;
	return fp_step_state(w, EHP_FRAME_FP);
}

#endif /* EHPROF_BPF_FP_FALLBACK_BPF_H_ */
