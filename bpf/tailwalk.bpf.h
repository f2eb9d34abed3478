/* The tail-call build's stack-recording programs (EHP_COMPAT, kernels 5.10
 * to 5.16, bpf/compat.bpf.h): without bpf_loop the user walk is a chain of
 * programs, each taking EHP_TAIL_FRAMES steps of the same per-frame step
 * functions the bpf_loop walk calls (dwarf_step_state, fp_step_state,
 * bpf/walk.bpf.h), then tail-calling the next; the walk's registers and
 * window stay in the per-CPU scratch, its counters in tail_state. The last
 * program sends the event (or keeps it, off-CPU). A chain is at most 33
 * tail calls (MAX_TAIL_CALL_CNT), so the walk reaches 1 + 33 *
 * EHP_TAIL_FRAMES user frames (--unwinder both: both walks share them).
 * A program type can only tail-call its own type: one array and one walk
 * program per type (perf_event, kprobe for uprobes, USDT and kprobes,
 * tracepoint, tp_btf for off-CPU). The event begins and ends as in the
 * bpf_loop build, through the same functions (begin_sample, send_sample:
 * bpf/profiler.bpf.c; begin_stacks, begin_user_walk, begin_fp_rewalk:
 * bpf/stacks.bpf.h; offcpu_begin, offcpu_keep: bpf/offcpu.bpf.h); only
 * the walk between is this file's. Included by profiler.bpf.c in place of
 * its bpf_loop programs. */
#ifndef EHPROF_BPF_TAILWALK_BPF_H_
#define EHPROF_BPF_TAILWALK_BPF_H_

/* What the last program does with the event. */
enum ehp_tail_finish {
	EHP_TAIL_SEND = 0,	  /* a probe hit: to the ring buffer */
	EHP_TAIL_SEND_VERIFY = 1, /* a sample: also --verify's capture */
	EHP_TAIL_OFFCPU = 2,	  /* a switch-out: kept until switch-in */
};

struct tail_state {
	__u64 started; /* the event's start, for its bpf_ns */
	struct leaf leaf;
	__u32 base;  /* the current walk's first frame slot */
	__u32 n;     /* its frames so far */
	__u32 flags; /* added to the sample's */
	__u8 phase;  /* 0: cfg.unwinder's walk; 1: --unwinder both's fp walk */
	__u8 pad;
	__u8 stop;   /* the current walk's stop reason, once it stopped */
	__u8 has_last;
	/* A copy of the previous frame's mapping (struct walk's last). */
	struct ehp_mapping last;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct tail_state);
} tail_state SEC(".maps");

/* Entry 0: the walk program of the type (user space fills it). */
#define EHP_TAIL_PROGS(name)                                                                       \
	struct {                                                                                   \
		__uint(type, BPF_MAP_TYPE_PROG_ARRAY);                                             \
		__uint(max_entries, 1);                                                            \
		__type(key, __u32);                                                                \
		__type(value, __u32);                                                              \
	} name SEC(".maps")
EHP_TAIL_PROGS(walk_perf);
EHP_TAIL_PROGS(walk_kprobe);
EHP_TAIL_PROGS(walk_tp);
EHP_TAIL_PROGS(walk_switch);

/* The last program's part: the event sent, or kept for switch-in. finish
 * is a constant in each program, so only off-CPU programs refer to the
 * off-CPU map (before 6.1 a perf_event program may not use a hash map that
 * is not preallocated). */
EHP_INLINE void tail_finish(struct scratch *s, struct tail_state *st, const __u32 finish)
{
	if (finish == EHP_TAIL_OFFCPU) {
		offcpu_keep(s, st->started, s->ev.tid);
		return;
	}
	__u64 size = event_size(s->ev.n_kernel, s->ev.n_user, s->ev.n_user_fp);
	if (finish == EHP_TAIL_SEND_VERIFY)
		defer_walk(s); /* bpf/deferred.bpf.h: a sample's, before it */
	struct scratch *sent = send_sample(s, size, st->flags, st->started);
	if (finish == EHP_TAIL_SEND_VERIFY)
		verify_sample(sent);
}

/* The current walk (w) stopped, or has no tail call left: its frames and
 * stop reason into the event. Starts --unwinder both's frame-pointer walk
 * after the first; returns whether that walk is to go on. */
EHP_INLINE int tail_walk_ended(struct scratch *s, struct tail_state *st, struct walk *w)
{
	__u8 stop = walk_stop_reason(w);
	if (st->phase) {
		s->ev.n_user_fp = w->n;
		s->ev.fp_stop_reason = stop;
		return 0;
	}
	s->ev.n_user = w->n;
	s->ev.stop_reason = stop;
	if (cfg.unwinder != EHP_UNWINDER_BOTH)
		return 0;
	struct walk f = {.s = s, .base = st->base + w->n, .pid = w->pid};
	begin_fp_rewalk(&f, &st->leaf);
	st->phase = 1;
	st->base = f.base;
	st->n = f.n;
	st->stop = f.stop;
	/* Should no tail call be left: the leaf alone. */
	s->ev.n_user_fp = f.n;
	s->ev.fp_stop_reason = EHP_STOP_DEPTH_LIMIT;
	return 1;
}

/* The first program: kernel stack, user registers, the leaf frame, then
 * the chain of walk programs in progs. */
EHP_INLINE void tail_walk_start(void *ctx, struct scratch *s, int user_mode, __u32 flags,
				__u32 finish, void *progs)
{
	__u32 zero = 0;
	struct tail_state *st = bpf_map_lookup_elem(&tail_state, &zero);
	if (!st)
		return;
	st->started = s->ev.time_ns;
	st->flags = flags;
	st->phase = 0;
	st->stop = 0;
	st->has_last = 0;
	int walk;
	__u32 nk = begin_stacks(ctx, s, user_mode, &walk);
	st->base = nk;
	st->n = 0;
	if (walk) {
		struct walk w = {.s = s, .base = nk, .pid = s->ev.pid};
		begin_user_walk(&w, &st->leaf, s->ev.pid, s->ev.tid, s->ev.pid);
		st->n = w.n;
		if (!w.stop)
			bpf_tail_call(ctx, progs, 0);
		if (tail_walk_ended(s, st, &w))
			bpf_tail_call(ctx, progs, 0);
	}
	tail_finish(s, st, finish);
}

/* One step of the walk in tail_state: the per-frame step functions of the
 * bpf_loop walk (bpf/walk.bpf.h). A global function, so the verifier
 * checks it once, not once per step of a walk program (as it checks
 * bpf_loop's callback once); its state comes from the maps, since 5.10
 * passes a global function scalars only. Returns whether the walk goes
 * on. */
__noinline int ehp_tail_step(__u32 fp)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	struct tail_state *st = bpf_map_lookup_elem(&tail_state, &zero);
	if (!s || !st)
		return 0;
	struct walk w = {.s = s, .base = st->base, .n = st->n, .pid = s->ev.pid};
	int more;
	if (fp) {
		more = fp_step_state(&w, 0);
	} else {
		w.proc = bpf_map_lookup_elem(&procs, &w.pid);
		if (!w.proc) {
			st->stop = EHP_STOP_NO_PROC; /* gone since the first program */
			return 0;
		}
		if (st->has_last)
			w.last = &st->last;
		more = dwarf_step_state(&w);
		st->has_last = w.last != 0;
		if (w.last)
			st->last = *w.last;
	}
	st->n = w.n;
	st->stop = w.stop;
	return more;
}

/* A walk program: EHP_TAIL_FRAMES more steps, then the next program. */
EHP_INLINE void tail_walk(void *ctx, void *progs, const __u32 finish)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	struct tail_state *st = bpf_map_lookup_elem(&tail_state, &zero);
	if (!s || !st)
		return;
	const __u32 fp = st->phase || cfg.unwinder == EHP_UNWINDER_FP;
	/* The clock once a program: EHP_TAIL_FRAMES is near EHP_BUDGET_EVERY
	 * (bpf/walk.bpf.h). */
	if (walk_budget_spent(s)) {
		st->stop = EHP_STOP_TIME_BUDGET;
	} else {
#pragma clang loop unroll(disable)
		for (int i = 0; i < EHP_TAIL_FRAMES; i++) {
			if (!ehp_tail_step(fp))
				break;
		}
	}
	struct walk w = {.s = s, .base = st->base, .n = st->n, .pid = s->ev.pid, .stop = st->stop};
	if (!w.stop)
		bpf_tail_call(ctx, progs, 0);
	if (tail_walk_ended(s, st, &w))
		bpf_tail_call(ctx, progs, 0);
	tail_finish(s, st, finish);
}

SEC("perf_event")
int ehprof_sample(struct bpf_perf_event_data *ctx)
{
	struct scratch *s = begin_sample(1);
	if (s)
		tail_walk_start(ctx, s, perf_hit_user_mode(ctx), 0, EHP_TAIL_SEND_VERIFY, &walk_perf);
	return 0;
}

SEC("perf_event")
int ehprof_sample_walk(struct bpf_perf_event_data *ctx)
{
	tail_walk(ctx, &walk_perf, EHP_TAIL_SEND_VERIFY);
	return 0;
}

/* A probe hit (bpf/profiler.bpf.c's probe_hit), walked by progs. */
EHP_INLINE int probe_hit_tail(void *ctx, int user_mode, void *progs)
{
	struct scratch *s = begin_sample(0);
	if (s)
		tail_walk_start(ctx, s, user_mode, EHP_SAMPLE_PROBE, EHP_TAIL_SEND, progs);
	return 0;
}

SEC("uprobe")
int ehprof_uprobe(struct pt_regs *ctx)
{
	return probe_hit_tail(ctx, 1, &walk_kprobe);
}

SEC("usdt")
int BPF_USDT(ehprof_usdt)
{
	return probe_hit_tail(ctx, 1, &walk_kprobe);
}

SEC("kprobe")
int ehprof_kprobe(struct pt_regs *ctx)
{
	return probe_hit_tail(ctx, 0, &walk_kprobe);
}

/* The walk program of uprobes, USDT probes and kprobes (one program type). */
SEC("kprobe")
int ehprof_kprobe_walk(struct pt_regs *ctx)
{
	tail_walk(ctx, &walk_kprobe, EHP_TAIL_SEND);
	return 0;
}

SEC("tracepoint")
int ehprof_tracepoint(void *ctx)
{
	return probe_hit_tail(ctx, 0, &walk_tp);
}

SEC("tracepoint")
int ehprof_tracepoint_walk(void *ctx)
{
	tail_walk(ctx, &walk_tp, EHP_TAIL_SEND);
	return 0;
}

/* Off-CPU: the task switched in is seen first, since the switch-out's walk
 * ends in other programs. */
SEC("tp_btf/sched_switch")
int BPF_PROG(ehprof_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	offcpu_switch_in(next);
	struct scratch *s = offcpu_begin(prev, preempt);
	if (s)
		tail_walk_start(ctx, s, 0, 0, EHP_TAIL_OFFCPU, &walk_switch);
	return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ehprof_switch_walk)
{
	tail_walk(ctx, &walk_switch, EHP_TAIL_OFFCPU);
	return 0;
}

#endif /* EHPROF_BPF_TAILWALK_BPF_H_ */
