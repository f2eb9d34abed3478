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

#if defined(__bpf__) && !defined(EHP_COMPAT)
#define EHP_VM_EXEC 0x4 /* include/linux/mm.h */
/* bpf_find_vma's callback: the mapping's range into data (a __u64[2])
 * when it is executable memory that no file is behind. */
static long anon_exec_vma(struct task_struct *task, struct vm_area_struct *vma, void *data)
{
	if (!vma->vm_file && (vma->vm_flags & EHP_VM_EXEC)) {
		((__u64 *)data)[0] = vma->vm_start;
		((__u64 *)data)[1] = vma->vm_end;
	}
	return 0;
}
#endif

/* Whether addr lies in the anonymous executable memory this walk found
 * (in_new_jit_code): the step after one into JIT code, at a pc in it. */
EHP_INLINE int in_new_jit_range(struct scratch *s, __u64 addr)
{
	return addr >= s->new_jit[0] && addr < s->new_jit[1];
}

/* Whether addr, in no mapping of the process's entry, lies in anonymous
 * executable memory: JIT code made executable since user space read the
 * maps (a Chromium renderer's V8 makes its 512 MiB code range executable
 * with one pkey_mprotect as it starts, then runs JavaScript there before
 * the maps are read again: 2.8 % of a cold whole-host run stopped so). It
 * is walked as the entry's anonymous mappings are, by frame pointer; the
 * walk's EHP_EVENT_UNKNOWN_PC has user space read the maps for its names.
 * Not in the tail-call build (no bpf_find_vma before 5.17: such samples are
 * finished late) nor in the replay, whose mappings are read after. The
 * mapping's lock taken (the process mapping memory now) counts as no.
 * Asked only of a frame pointer's return address: bpf_find_vma answers
 * once a sample, and a walk that stops at a pc in no mapping (a library
 * dlopen just mapped, a leaf in new JIT code) is finished late from a
 * copy that needs that answer for the stack's end (bpf/deferred.bpf.h). */
EHP_INLINE int in_new_jit_code(struct scratch *s, __u64 addr)
{
	if (in_new_jit_range(s, addr))
		return 1;
#if defined(__bpf__) && !defined(EHP_COMPAT)
	__u64 range[2] = {0, 0};
	if (bpf_find_vma(bpf_get_current_task_btf(), addr, anon_exec_vma, range, 0) || addr < range[0] ||
	    addr >= range[1])
		return 0;
	s->new_jit[0] = range[0];
	s->new_jit[1] = range[1];
	return 1;
#else
	return 0;
#endif
}

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
		if (ra && in_new_jit_code(s, ra - 1)) {
			w->last = 0;
			return fp_step_state(w, EHP_FRAME_FP);
		}
		w->stop = EHP_STOP_FP_RA_UNMAPPED;
		return 0;
	}
	w->last = m;
	return fp_step_state(w, EHP_FRAME_FP);
}

#endif /* EHPROF_BPF_FP_FALLBACK_BPF_H_ */
