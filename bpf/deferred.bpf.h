/* The cold window: a sample whose walk stopped because its table was not
 * loaded yet (EHP_STOP_NO_TABLE), its process was not known yet
 * (EHP_STOP_NO_PROC) or its pc, or the return address its frame pointer
 * led to, lay in no mapping the process's entry has (EHP_STOP_NO_MAPPING,
 * EHP_STOP_FP_RA_UNMAPPED: a library ld.so or dlopen has just mapped, JIT
 * code just placed, which user space reads on the EHP_EVENT_UNKNOWN_PC the
 * walk sent) is preceded
 * by an EHP_EVENT_DEFERRED record: the walk's registers where it stopped
 * and a copy of the user stack from that frame's sp, which user space
 * walks on with the same code once the table exists (bpf/host/,
 * agent/deferred/). Only such samples pay the copy; each CPU's copies come
 * out of a token bucket of cfg.deferred_rate bytes a second. Included
 * after bpf/verify.bpf.h (the copy callback). */
#ifndef EHPROF_BPF_DEFERRED_BPF_H_
#define EHPROF_BPF_DEFERRED_BPF_H_

EHP_STACK_COPY_FN(copy_deferred_page, EHP_DEFERRED_STACK_MAX)

/* The bytes this CPU may copy now (refilled for the time since its last
 * copy, up to EHP_DEFERRED_BURST_S seconds' worth), or 0. */
EHP_INLINE __u64 deferred_tokens(struct deferred_budget *b, __u64 now)
{
	const __u64 cap = (__u64)cfg.deferred_rate * EHP_DEFERRED_BURST_S;
	__u64 dt = now - b->last_ns;
	if (b->last_ns == 0 || dt > 1000000000ull * EHP_DEFERRED_BURST_S)
		dt = 1000000000ull * EHP_DEFERRED_BURST_S;
	b->last_ns = now;
	__u64 tokens = b->tokens + dt * cfg.deferred_rate / 1000000000ull;
	b->tokens = tokens > cap ? cap : tokens;
	return b->tokens;
}

/* Whether pid may send one more copy for a pc in no mapping this second
 * (EHP_DEFERRED_NOMAP_PER_S), counting it. */
EHP_INLINE int nomap_copy_allowed(__u32 pid, __u64 now)
{
	struct deferred_nomap *n = bpf_map_lookup_elem(&deferred_nomap, &pid);
	if (!n) {
		struct deferred_nomap fresh = {.window_ns = now, .count = 1};
		bpf_map_update_elem(&deferred_nomap, &pid, &fresh, BPF_ANY);
		return 1;
	}
	if (now - n->window_ns >= 1000000000ull) {
		n->window_ns = now;
		n->count = 0;
	}
	if (n->count >= EHP_DEFERRED_NOMAP_PER_S)
		return 0;
	n->count++;
	return 1;
}

/* Sends s's walk state and stack copy when its walk stopped for want of a
 * table, a process entry or a mapping (nothing otherwise); returns
 * whether it did.
 * Its own frame, so the sampler's stack does not grow by the copy's
 * context (6.1's 512 bytes for a chain of calls); an int, so its exit has
 * r0 set. */
static __noinline int defer_walk(struct scratch *s)
{
	__u8 stop = s->ev.stop_reason;
	/* An address in no known mapping: capped a process (a stack leading to
	 * garbage would ask with every sample). */
	int unmapped = stop == EHP_STOP_NO_MAPPING || stop == EHP_STOP_FP_RA_UNMAPPED;
	if (!cfg.deferred_rate || cfg.unwinder != EHP_UNWINDER_DWARF ||
	    (stop != EHP_STOP_NO_TABLE && stop != EHP_STOP_NO_PROC && !unmapped))
		return 0;
	__u64 now = bpf_ktime_get_ns();
	if (unmapped && !nomap_copy_allowed(s->ev.pid, now))
		return 0;
	__u32 zero = 0, cpu = bpf_get_smp_processor_id();
	struct deferred_budget *b = bpf_map_lookup_elem(&deferred_budget, &zero);
	struct deferred_scratch *ds = bpf_map_lookup_elem(&deferred_scratch, &cpu);
	if (!b || !ds)
		return 0;
	__u64 tokens = deferred_tokens(b, now);
	if (tokens < PAGE_SIZE_BYTES) {
		count(EHP_STAT_DEFERRED_BUDGET);
		return 0;
	}
	__builtin_memcpy(&ds->ev, &s->ev, sizeof(ds->ev));
	ds->ev.kind = EHP_EVENT_DEFERRED;
	__builtin_memcpy(ds->d.regs, s->regs, sizeof(ds->d.regs));
	ds->d.regs[EHP_REG_RIP] = s->pc;
	ds->d.valid = s->valid;
	ds->d.exact = s->exact;
	ds->d.n_user = s->ev.n_user;
	ds->d.stop_reason = stop;
	ds->d.pad = 0;
	__u64 sp = s->regs[EHP_REG_RSP];
	struct copy_ctx c = {.buf = ds->stack, .sp = sp,
			     .limit = tokens < EHP_DEFERRED_STACK_MAX ? (__u32)tokens : EHP_DEFERRED_STACK_MAX};
	if (s->valid & REG_BIT(EHP_REG_RSP))
		EHP_COPY_PAGES(copy_deferred_page, EHP_DEFERRED_PAGES, &c);
	__u32 len = c.len > EHP_DEFERRED_STACK_MAX ? EHP_DEFERRED_STACK_MAX : c.len;
	ds->d.stack_len = len;
	b->tokens -= len < b->tokens ? len : b->tokens;
	__u64 size = copy_event_size(sizeof(ds->ev) + sizeof(ds->d), len, EHP_DEFERRED_STACK_MAX);
	if (bpf_ringbuf_output(&events, ds, size, 0)) {
		count(EHP_STAT_EVENT_DROPS);
		return 0;
	}
	count(EHP_STAT_DEFERRED_SENT);
	return 1;
}

#endif /* EHPROF_BPF_DEFERRED_BPF_H_ */
