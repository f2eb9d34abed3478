/* One event's stacks for the current task, from any tracing context: the
 * kernel stack, the user registers saved at kernel entry, and the user walk
 * (bpf/walk.bpf.h). Every program that records a stack goes through
 * begin_event and collect_stacks. */
#ifndef EHPROF_BPF_STACKS_BPF_H_
#define EHPROF_BPF_STACKS_BPF_H_

/* Loads the user registers of the current task into s. On x86-64 every
 * entry from user mode (syscall, interrupt, the sampling timer's or an NMI,
 * a uprobe's breakpoint) saves the user registers at the top of the task's
 * kernel stack, so bpf_task_pt_regs() has them whether the event hit user
 * or kernel mode. user_mode: the event interrupted user code, so its pc is
 * exact. 0 for kernel threads. */
EHP_INLINE int load_user_regs(struct scratch *s, int user_mode)
{
	struct task_struct *task = bpf_get_current_task_btf();
	if (!task->mm)
		return 0;
	if (user_mode)
		s->ev.flags |= EHP_SAMPLE_USER_MODE;
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!r)
		return 0;
	EHP_LOAD_GPRS(s->regs, r);
	s->valid = ALL_REGS;
	s->pc = s->regs[EHP_REG_RIP];
	/* Inside a syscall (orig_ax holds its number, not -1) the user pc is
	 * the instruction after `syscall`, which may lie past the end of its
	 * function's FDE (__restore_rt's rt_sigreturn): look it up at pc - 1
	 * like a return address. Interrupted user code keeps its exact pc. */
	s->exact = user_mode || EHP_NOT_IN_SYSCALL(r);
	s->win_len = 0;
	return s->pc != 0;
}

/* Saves the leaf registers so a second walk can start from them. */
struct leaf {
	__u64 rsp, rbp, pc;
};

/* Wake-up flags for a sample sent to the ring buffer: none until the ring
 * is a quarter full (user space polls at least every 100 ms anyway). A
 * wake-up per sample has ehprof's thread preempt the tasks it profiles
 * thousands of times a second: with --off-cpu each such preemption of a
 * busy thread is itself a block, and its event the next wake-up (seen: a
 * spinning thread switched out every ~30 us). Lifecycle and "unknown"
 * events still wake user space at once. */
EHP_INLINE __u64 sample_wakeup(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >=
			       bpf_ringbuf_query(&events, BPF_RB_RING_SIZE) / 4
		       ? BPF_RB_FORCE_WAKEUP
		       : BPF_RB_NO_WAKEUP;
}

/* Starts the event in s for the current task. */
EHP_INLINE void begin_event(struct scratch *s, __u32 kind, __u32 pid, __u32 tid)
{
	__builtin_memset(&s->ev, 0, sizeof(s->ev));
	s->ev.kind = kind;
	s->ev.pid = pid;
	s->ev.tid = tid;
	s->ev.cpu = bpf_get_smp_processor_id();
	s->ev.time_ns = bpf_ktime_get_ns();
	bpf_get_current_comm(s->ev.comm, sizeof(s->ev.comm));
}

/* Fills s's frames for the current task: the kernel stack from ctx (any
 * tracing program's context), then the user stack walked as cfg says,
 * then (EHP_UNWINDER_BOTH) the frame-pointer walk of the same registers.
 * Returns the bytes of s to send. */
EHP_INLINE __u64 collect_stacks(void *ctx, struct scratch *s, int user_mode)
{
	__u32 pid = s->ev.pid, tid = s->ev.tid;
	__u32 nk = 0;
	if (cfg.kernel_stacks) {
		long bytes =
		    bpf_get_stack(ctx, s->frames, EHP_MAX_KERNEL_FRAMES * sizeof(__u64), 0);
		if (bytes > 0)
			nk = (__u32)bytes / sizeof(__u64);
	}
	if (nk > EHP_MAX_KERNEL_FRAMES)
		nk = EHP_MAX_KERNEL_FRAMES;
	s->ev.n_kernel = nk;

	struct walk w = {.s = s, .base = nk, .pid = pid};
	__u32 nu = 0, nfp = 0;
	s->ev.stop_reason = EHP_STOP_NOT_WALKED;
	if (cfg.user_stacks) {
		if (!load_user_regs(s, user_mode)) {
			s->ev.stop_reason = EHP_STOP_NO_USER_STACK;
		} else {
			struct leaf leaf = {s->regs[EHP_REG_RSP], s->regs[EHP_REG_RBP], s->pc};
			/* --verify needs the leaf registers; the walk overwrites them. */
			if (cfg.verify_every) {
				__builtin_memcpy(s->leaf_regs, s->regs, sizeof(s->leaf_regs));
				s->leaf_exact = s->exact;
			}
			push_frame(&w, s->pc | EHP_FRAME_EXACT);
			if (cfg.unwinder != EHP_UNWINDER_FP) {
				w.proc = bpf_map_lookup_elem(&procs, &pid);
				if (!w.proc) {
					w.stop = EHP_STOP_NO_PROC;
					notify(EHP_EVENT_UNKNOWN_PID, pid, tid, 0);
				} else {
					w.python = python_begin(s, pid);
					bpf_loop(EHP_MAX_USER_FRAMES, py_dwarf_step, &w, 0);
				}
			} else {
				bpf_loop(EHP_MAX_USER_FRAMES, fp_step, &w, 0);
			}
			nu = w.n;
			s->ev.stop_reason = w.stop ? w.stop : EHP_STOP_DEPTH_LIMIT;
			if (cfg.unwinder == EHP_UNWINDER_BOTH) {
				struct walk f = {.s = s, .base = nk + nu, .pid = pid};
				s->regs[EHP_REG_RSP] = leaf.rsp;
				s->regs[EHP_REG_RBP] = leaf.rbp;
				s->valid = REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
				s->pc = leaf.pc;
				push_frame(&f, leaf.pc | EHP_FRAME_EXACT);
				bpf_loop(EHP_MAX_USER_FRAMES, fp_step, &f, 0);
				nfp = f.n;
				s->ev.fp_stop_reason = f.stop ? f.stop : EHP_STOP_DEPTH_LIMIT;
			}
		}
	}
	s->ev.n_user = nu;
	s->ev.n_user_fp = nfp;
	__u64 size = sizeof(s->ev) + (__u64)(nk + nu + nfp) * sizeof(__u64);
	if (size > sizeof(s->ev) + sizeof(s->frames))
		size = sizeof(s->ev) + sizeof(s->frames);
	return size;
}

#endif /* EHPROF_BPF_STACKS_BPF_H_ */
