/* Off-CPU time, all at sched_switch: when a followed task leaves the CPU
 * it is still the current task, so its stacks are walked then (user memory
 * can only be read as the current task: bpf_probe_read_user) and kept by
 * tid with the switch-out time; when the scheduler picks it again the
 * blocked time is known and, at or above cfg.offcpu_min_ns, the kept
 * stacks are sent with it. The walk is paid at every switch-out of a
 * followed task (the block's length is not known yet, as for offcputime's
 * stack id); the ring buffer sees one event per block over the threshold,
 * nothing per context switch below it. */
#ifndef EHPROF_BPF_OFFCPU_BPF_H_
#define EHPROF_BPF_OFFCPU_BPF_H_

/* Frames kept for a blocked task: the kernel stack and the user stack up to
 * 512 deep (deeper walks are cut there, stop reason depth limit): a bit
 * over 5 KiB a blocked thread instead of the 17 KiB of a full event. */
#define EHP_OFFCPU_MAX_FRAMES (EHP_MAX_KERNEL_FRAMES + 512)

/* A switched-out task's stacks: the event as it will be sent, its time
 * the switch-out, then the frames. The prefix of struct scratch. */
struct offcpu_stacks {
	struct ehp_event ev;
	__u64 frames[EHP_OFFCPU_MAX_FRAMES];
};

/* tid -> its stacks while it is off the CPU. Not preallocated: memory
 * follows the threads blocked at once, not the bound. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EHP_OFFCPU_THREADS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct offcpu_stacks);
} offcpu_tasks SEC(".maps");

/* task_struct.state was renamed __state in 5.14: both, by CO-RE, through
 * flavours of our own (the vmlinux.h it is built against may have either). */
struct task_struct___pre514 {
	long state;
} __attribute__((preserve_access_index));
struct task_struct___post514 {
	unsigned int __state;
} __attribute__((preserve_access_index));

#define EHP_TASK_INTERRUPTIBLE 0x1
#define EHP_TASK_UNINTERRUPTIBLE 0x2

/* The enum ehp_offcpu_state bit of a task leaving the CPU, or 0 for states
 * no one waits in (dead, stopped, traced, parked). */
EHP_INLINE __u32 offcpu_state_bit(struct task_struct *prev, bool preempt)
{
	long state;
	if (preempt)
		return EHP_OFFCPU_PREEMPTED;
	struct task_struct___post514 *post = (void *)prev;
	if (bpf_core_field_exists(post->__state))
		state = BPF_CORE_READ(post, __state);
	else
		state = BPF_CORE_READ((struct task_struct___pre514 *)prev, state);
	if (state == 0)
		return EHP_OFFCPU_PREEMPTED;
	if (state & EHP_TASK_INTERRUPTIBLE)
		return EHP_OFFCPU_SLEEPING;
	if (state & EHP_TASK_UNINTERRUPTIBLE)
		return EHP_OFFCPU_UNINTERRUPTIBLE;
	return 0;
}

/* Sends a kept block that lasted blocked ns, if long enough. */
EHP_INLINE void offcpu_send(struct offcpu_stacks *v, __u64 blocked)
{
	if (blocked < cfg.offcpu_min_ns)
		return;
	v->ev.addr = blocked;
	__u64 n = (__u64)v->ev.n_kernel + v->ev.n_user;
	if (n > EHP_OFFCPU_MAX_FRAMES)
		n = EHP_OFFCPU_MAX_FRAMES;
	count(EHP_STAT_OFFCPU_EVENTS);
	if (bpf_ringbuf_output(&events, v, sizeof(v->ev) + n * sizeof(__u64), sample_wakeup()))
		count(EHP_STAT_RINGBUF_DROPS);
}

/* For the task the scheduler picked: sends its block if long enough. */
EHP_INLINE void offcpu_switch_in(struct task_struct *next)
{
	__u32 tid = next->pid;
	struct offcpu_stacks *v = bpf_map_lookup_elem(&offcpu_tasks, &tid);
	if (!v)
		return;
	offcpu_send(v, bpf_ktime_get_ns() - v->ev.time_ns);
	bpf_map_delete_elem(&offcpu_tasks, &tid);
}

/* For the task leaving the CPU, before anything else: a block still kept
 * for it is one whose switch-in no sched_switch showed (seen on Firecracker
 * guests: a switch away from the guest's init threads fires no tracepoint,
 * so the task it hands the CPU to runs unseen). Kept, the next switch-out
 * would overwrite it and the block would be lost. It ended when the task
 * was last picked: the task's CPU time since then (the scheduler sets
 * se.prev_sum_exec_runtime at each pick, and has brought sum_exec_runtime
 * up to date before the switch) is how long before now that was. A class
 * that does not keep the pick mark (real-time) can give more than the whole
 * span: then the block is taken to have ended now, its run counted in it. */
EHP_INLINE void offcpu_end_unseen(struct task_struct *prev, __u32 tid)
{
	struct offcpu_stacks *v = bpf_map_lookup_elem(&offcpu_tasks, &tid);
	if (!v)
		return;
	const __u64 now = bpf_ktime_get_ns(), span = now - v->ev.time_ns;
	const __u64 ran = BPF_CORE_READ(prev, se.sum_exec_runtime) -
			  BPF_CORE_READ(prev, se.prev_sum_exec_runtime);
	count(EHP_STAT_OFFCPU_UNSEEN);
	offcpu_send(v, ran < span ? span - ran : span);
	bpf_map_delete_elem(&offcpu_tasks, &tid);
}

/* For the task leaving the CPU (the current task), before its stacks: ends
 * a block still kept for it, then returns the scratch with its sample
 * event begun, or NULL when this switch-out is not recorded. */
EHP_INLINE struct scratch *offcpu_begin(struct task_struct *prev, bool preempt)
{
	__u32 pid = prev->tgid, tid = prev->pid;
	if (tid == 0 || pid == cfg.self_pid) /* the idle task; ourselves */
		return NULL;
	offcpu_end_unseen(prev, tid);
	if (!(offcpu_state_bit(prev, preempt) & cfg.offcpu_states))
		return NULL;
	if (!task_wanted(pid, tid)) /* prev is still the current task */
		return NULL;
	return scratch_event(pid, tid);
}

/* Keeps s, the stacks of the task switched out (tid), walked since
 * started, until it runs again. */
EHP_INLINE void offcpu_keep(struct scratch *s, __u64 started, __u32 tid)
{
	s->ev.flags |= EHP_SAMPLE_OFF_CPU;
	/* Only kernel and user frames are kept (--unwinder both is refused
	 * with --off-cpu), and no more than there is room for. */
	s->ev.n_user_fp = 0;
	if (s->ev.n_kernel + s->ev.n_user > EHP_OFFCPU_MAX_FRAMES) {
		s->ev.n_user = EHP_OFFCPU_MAX_FRAMES - s->ev.n_kernel;
		s->ev.stop_reason = EHP_STOP_DEPTH_LIMIT;
	}
	s->ev.bpf_ns = event_done(started);
	_Static_assert(__builtin_offsetof(struct scratch, frames) ==
			       __builtin_offsetof(struct offcpu_stacks, frames),
		       "offcpu_stacks is a prefix of scratch");
	if (bpf_map_update_elem(&offcpu_tasks, &tid, s, BPF_ANY))
		count(EHP_STAT_OFFCPU_UNTRACKED);
}

/* For the task leaving the CPU: its stacks, kept. */
EHP_INLINE void offcpu_switch_out(void *ctx, struct task_struct *prev, bool preempt)
{
	struct scratch *s = offcpu_begin(prev, preempt);
	if (!s)
		return;
	const __u64 started = s->ev.time_ns;
	collect_stacks(ctx, s, 0);
	offcpu_keep(s, started, s->ev.tid);
}

#endif /* EHPROF_BPF_OFFCPU_BPF_H_ */
