/* One event's stacks for the current task, from any tracing context: the
 * kernel stack, the user registers saved at kernel entry, and the user walk
 * (bpf/walk.bpf.h). Every program that records a stack goes through
 * begin_event, begin_stacks and begin_user_walk; the bpf_loop build then
 * walks in collect_stacks, the tail-call build in a chain of programs
 * (bpf/tailwalk.bpf.h). Also compiled as C for the walk replay. */
#ifndef EHPROF_BPF_STACKS_BPF_H_
#define EHPROF_BPF_STACKS_BPF_H_

/* Ends a load of the user registers into s->regs: all of them valid, the
 * pc theirs (exact: looked up as it is, else at pc - 1 like a return
 * address), no stack window read yet. Returns whether there is a pc. */
EHP_INLINE int user_regs_loaded(struct scratch *s, int exact)
{
	s->valid = ALL_REGS;
	s->pc = s->regs[EHP_REG_RIP];
	s->exact = exact;
	s->win_len = 0;
	return s->pc != 0;
}

/* Whether task's address space is one exec is still building: from
 * exec_mmap on (begin_new_exec, which then tears the old address space
 * down) until start_thread, the task's saved registers are still the old
 * program's, whose stack is gone: reading it only faults. The ELF loader
 * sets the new mm_struct's arg_end in create_elf_tables (arg_start before,
 * by setup_arg_pages, and the loader maps the program, ld.so and the vDSO
 * after that) and end_code after create_elf_tables, just before
 * start_thread: create_elf_tables's own reads of the new argv and envp
 * (strnlen_user) are in the window too. */
#ifndef EHP_COMPAT
EHP_INLINE int exec_replacing_mm(struct task_struct *task)
{
	return task->mm->arg_end == 0 || task->mm->end_code == 0;
}
#else
EHP_INLINE int exec_replacing_mm(struct task_struct *task)
{
	return BPF_CORE_READ(task, mm, arg_end) == 0 || BPF_CORE_READ(task, mm, end_code) == 0;
}
#endif

/* Whether a sample in kernel mode inside execve has registers that do
 * not belong to the task's mm, whose stack is gone, so it has no user
 * stack: from exec_mmap until start_thread the saved registers are the old
 * program's (exec_replacing_mm covers the start of that; the brk's
 * randomization and the rest of load_elf_binary after end_code are
 * caught here, by the old sp's unreadable stack). A sample whose saved sp
 * is the new mm's start_stack is one between start_thread and the
 * sched_process_exec programs: the registers are the new image's (its
 * entry point), but ehprof_exec has not run, so its exec event would be
 * timed after this sample and user space would name the sample in the old
 * image. Its time is kept for that event (exec_starts), with the mm, which
 * ehprof_exec checks. The replay build has no exec. */
EHP_INLINE int exec_regs_stale(struct task_struct *task, struct scratch *s)
{
#ifdef __bpf__
	if (!bpf_core_field_exists(task->in_execve) || !BPF_CORE_READ_BITFIELD_PROBED(task, in_execve))
		return 0;
	__u64 mm = (__u64)BPF_CORE_READ(task, mm);
	__u64 start_stack = BPF_CORE_READ(task, mm, start_stack);
	if (start_stack && s->regs[EHP_REG_RSP] == start_stack) {
		struct ehp_exec_start v = {mm, s->ev.time_ns};
		__u32 tid = s->ev.tid;
		bpf_map_update_elem(&exec_starts, &tid, &v, BPF_NOEXIST);
		return 0;
	}
	__u64 word;
	return bpf_probe_read_user(&word, sizeof(word), (const void *)s->regs[EHP_REG_RSP]) != 0;
#else
	return 0;
#endif
}

#ifndef EHP_COMPAT
/* Loads the user registers of the current task into s. On x86-64 every
 * entry from user mode (syscall, interrupt, the sampling timer's or an NMI,
 * a uprobe's breakpoint) saves the user registers at the top of the task's
 * kernel stack, so bpf_task_pt_regs() has them whether the event hit user
 * or kernel mode. user_mode: the event interrupted user code, so its pc is
 * exact. 0 for kernel threads, exiting tasks (no mm) and a task exec is
 * giving a new address space (exec_replacing_mm). */
EHP_INLINE int load_user_regs(void *ctx, struct scratch *s, int user_mode)
{
	struct task_struct *task = bpf_get_current_task_btf();
	if (!task->mm || exec_replacing_mm(task))
		return 0;
	if (user_mode)
		s->ev.flags |= EHP_SAMPLE_USER_MODE;
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!r)
		return 0;
	EHP_LOAD_GPRS(s->regs, r);
	if (!user_mode && exec_regs_stale(task, s))
		return 0;
	/* Inside a syscall (orig_ax holds its number, not -1) the user pc is
	 * the instruction after `syscall`, which may lie past the end of its
	 * function's FDE (__restore_rt's rt_sigreturn): look it up at pc - 1
	 * like a return address. Interrupted user code keeps its exact pc. */
	return user_regs_loaded(s, user_mode || EHP_NOT_IN_SYSCALL(r));
}
#else
/* The same without bpf_task_pt_regs (bpf/compat.bpf.h, x86-64 only): an
 * event that interrupted user mode (a perf_event, a uprobe) has the user
 * registers in ctx; otherwise they are at the top of the task's kernel
 * stack. */
EHP_INLINE int load_user_regs(void *ctx, struct scratch *s, int user_mode)
{
	struct task_struct *task = EHP_CURRENT_TASK();
	if (!BPF_CORE_READ(task, mm) || exec_replacing_mm(task))
		return 0;
	if (user_mode) {
		/* Volatile: context loads stay full-width and apart from the
		 * map loads below (one instruction may not read both). */
		const volatile struct ehp_user_regs *u = ctx;
		s->ev.flags |= EHP_SAMPLE_USER_MODE;
		EHP_LOAD_GPRS(s->regs, u);
		return user_regs_loaded(s, 1);
	}
	__u64 at = EHP_TASK_PT_REGS(task);
	/* s->sig is free until a signal frame: room for the 168 bytes. */
	_Static_assert(sizeof(s->sig) >= sizeof(struct ehp_user_regs), "pt_regs fits in sig");
	if (!at || bpf_probe_read_kernel(&s->sig, sizeof(struct ehp_user_regs), (void *)at))
		return 0;
	const struct ehp_user_regs *r = (const void *)&s->sig;
	EHP_LOAD_GPRS(s->regs, r);
	if (exec_regs_stale(task, s))
		return 0;
	return user_regs_loaded(s, EHP_NOT_IN_SYSCALL(r));
}
#endif /* EHP_COMPAT */

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

/* The per-CPU scratch with a sample event begun in it for the current
 * task, or NULL. */
EHP_INLINE struct scratch *scratch_event(__u32 pid, __u32 tid)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	if (s)
		begin_event(s, EHP_EVENT_SAMPLE, pid, tid);
	return s;
}

/* An event's stacks up to the user walk: the kernel stack from ctx (any
 * tracing program's context) into s's first frames, then the user
 * registers into s. Returns the kernel frames' count; *walk says whether
 * there is a user stack to walk (else s->ev.stop_reason says why not). */
EHP_INLINE __u32 begin_stacks(void *ctx, struct scratch *s, int user_mode, int *walk)
{
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
	*walk = 0;
	s->ev.stop_reason = EHP_STOP_NOT_WALKED;
	if (cfg.user_stacks) {
		if (!load_user_regs(ctx, s, user_mode))
			s->ev.stop_reason = EHP_STOP_NO_USER_STACK;
		else
			*walk = 1;
	}
	return nk;
}

/* The pid the interpreter walks look their process up by: 0 (no
 * interpreter's process) for every other sample with cfg.interp_alternate,
 * which flags those samples. */
EHP_INLINE __u32 interp_pid(struct scratch *s, __u32 pid)
{
	if (!cfg.interp_alternate || (++s->interp_turn & 1))
		return pid;
	s->ev.flags |= EHP_SAMPLE_INTERP_OFF;
	return 0;
}

/* The user walk's first frame, the leaf in s's registers (kept in leaf for
 * the second walk of --unwinder both, and for --verify), and the process
 * entry the CFI walk needs (w->stop set when there is none); ipid, the pid
 * of the interpreter walks (interp_pid). */
EHP_INLINE void begin_user_walk(struct walk *w, struct leaf *leaf, __u32 pid, __u32 tid, __u32 ipid)
{
	struct scratch *s = w->s;
	s->rb_jit = RB_JIT_NONE; /* ruby_begin says otherwise for a Ruby process */
	s->new_jit[0] = s->new_jit[1] = 0;
	leaf->rsp = s->regs[EHP_REG_RSP];
	leaf->rbp = s->regs[EHP_REG_RBP];
	leaf->pc = s->pc;
	/* --verify needs the leaf registers; the walk overwrites them. */
	if (cfg.verify_every) {
		__builtin_memcpy(s->leaf_regs, s->regs, sizeof(s->leaf_regs));
		s->leaf_exact = s->exact;
	}
	push_frame(w, s->pc | EHP_FRAME_EXACT);
	php_begin(s, ipid); /* bpf/php.bpf.h */
	if (cfg.unwinder != EHP_UNWINDER_FP) {
		w->proc = bpf_map_lookup_elem(&procs, &pid);
		if (!w->proc) {
			w->stop = EHP_STOP_NO_PROC;
			notify(EHP_EVENT_UNKNOWN_PID, pid, tid, 0);
		}
	}
}

/* --unwinder both's frame-pointer walk from the leaf again, its frames
 * after the first walk's (f->base). */
EHP_INLINE void begin_fp_rewalk(struct walk *f, const struct leaf *leaf)
{
	struct scratch *s = f->s;
	s->regs[EHP_REG_RSP] = leaf->rsp;
	s->regs[EHP_REG_RBP] = leaf->rbp;
	s->valid = REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
	s->pc = leaf->pc;
	push_frame(f, leaf->pc | EHP_FRAME_EXACT);
}

/* The bytes of the event in s to send for these frame counts. */
EHP_INLINE __u64 event_size(__u32 nk, __u32 nu, __u32 nfp)
{
	__u64 size = sizeof(struct ehp_event) + (__u64)(nk + nu + nfp) * sizeof(__u64);
	if (size > sizeof(struct ehp_event) + EHP_MAX_EVENT_FRAMES * sizeof(__u64))
		size = sizeof(struct ehp_event) + EHP_MAX_EVENT_FRAMES * sizeof(__u64);
	return size;
}

/* Fills s's frames for the current task: the kernel stack from ctx, then
 * the user stack walked as cfg says, then (EHP_UNWINDER_BOTH) the
 * frame-pointer walk of the same registers. Returns the bytes of s to
 * send. */
EHP_INLINE __u64 collect_stacks(void *ctx, struct scratch *s, int user_mode)
{
	__u32 pid = s->ev.pid, tid = s->ev.tid;
	int walk;
	__u32 nk = begin_stacks(ctx, s, user_mode, &walk);
	/* Before the branch: declared in it, clang's code for this function
	 * meets a verifier bug of 6.18 ("No program to jit", load refused). */
	struct walk w = {.s = s, .base = nk, .pid = pid};
	__u32 nu = 0, nfp = 0;
	if (walk) {
		struct leaf leaf;
		__u32 ipid = interp_pid(s, pid);
		begin_user_walk(&w, &leaf, pid, tid, ipid);
		if (cfg.unwinder == EHP_UNWINDER_FP) {
			bpf_loop(EHP_MAX_USER_FRAMES, fp_step, &w, 0);
		} else if (w.proc) {
			w.python = python_begin(s, ipid);
			w.v8 = v8_begin(pid);
#ifdef EHP_JVM_WALK
			jvm_begin(s, pid);
#endif
			ruby_begin(s, ipid);
			perl_begin(s, ipid);
			bpf_loop(EHP_MAX_USER_FRAMES, pl_dwarf_step, &w, 0);
		}
		nu = w.n;
		s->ev.stop_reason = walk_stop_reason(&w);
		if (cfg.unwinder == EHP_UNWINDER_BOTH) {
			struct walk f = {.s = s, .base = nk + nu, .pid = pid};
			begin_fp_rewalk(&f, &leaf);
			bpf_loop(EHP_MAX_USER_FRAMES, fp_step, &f, 0);
			nfp = f.n;
			s->ev.fp_stop_reason = walk_stop_reason(&f);
		}
	}
	s->ev.n_user = nu;
	s->ev.n_user_fp = nfp;
	return event_size(nk, nu, nfp);
}

#endif /* EHPROF_BPF_STACKS_BPF_H_ */
