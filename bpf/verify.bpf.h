/* --verify: every cfg.verify_every-th sample also sends the leaf registers
 * and up to EHP_VERIFY_STACK_MAX bytes of the user stack, for an unwind in
 * user space with libdwfl (agent/verify/). Included after bpf/walk.bpf.h. */
#ifndef EHPROF_BPF_VERIFY_BPF_H_
#define EHPROF_BPF_VERIFY_BPF_H_

/* Copies the user stack from sp upwards, a page at a time (a read that
 * would cross into an unmapped page fails whole), up to the stack top or
 * limit bytes, into buf (a map value with a page of slack past cap, so
 * every copy is a masked offset plus at most a page: bounds the verifier
 * can follow). One callback per buffer's cap (--verify's, the deferred
 * walk's: bpf/deferred.bpf.h). */
struct copy_ctx {
	__u8 *buf;
	__u64 sp;
	__u32 len;
	__u32 limit; /* <= the callback's cap */
};

#ifdef EHP_COMPAT
#define EHP_COPY_FN EHP_INLINE /* called in a loop (bpf/compat.bpf.h) */
#else
#define EHP_COPY_FN static
#endif

#define EHP_STACK_COPY_FN(name, cap)                                                              \
	EHP_COPY_FN long name(__u32 i, void *data)                                                 \
	{                                                                                          \
		struct copy_ctx *c = data;                                                         \
		__u32 off = c->len;                                                                \
		if (off >= c->limit || off >= (cap))                                               \
			return 1;                                                                  \
		__u64 addr = c->sp + off;                                                          \
		__u32 chunk = PAGE_SIZE_BYTES - (__u32)(addr & (PAGE_SIZE_BYTES - 1));             \
		if (chunk > c->limit - off) /* never past limit: it is what was paid for */        \
			chunk = c->limit - off;                                                    \
		off &= (cap) - 1;                                                                  \
		/* Past the compiler, which knows chunk is at most a page and drops    \
		 * a mask; 6.1's and 5.10's verifiers do not know it where chunk is    \
		 * limit - off ("R2 unbounded memory access"). */                       \
		EHP_CLAMP_UMAX(chunk, PAGE_SIZE_BYTES);                                            \
		if (chunk == 0)                                                                    \
			return 1;                                                                  \
		if (bpf_probe_read_user(c->buf + off, chunk, (void *)addr))                        \
			return 1;                                                                  \
		c->len = off + chunk;                                                              \
		return 0;                                                                          \
	}

EHP_STACK_COPY_FN(copy_stack_page, EHP_VERIFY_STACK_MAX)

/* Runs a copy callback over at most `pages` pages of c. */
#ifdef EHP_COMPAT
#define EHP_COPY_PAGES(fn, pages, c)                                                               \
	for (__u32 i_ = 0; i_ < (pages); i_++)                                                     \
		if (fn(i_, (c)))                                                                   \
			break
#else
#define EHP_COPY_PAGES(fn, pages, c) bpf_loop((pages), fn, (c), 0)
#endif

/* The bytes of a copy's record: head, then len bytes of stack (at most
 * cap, bounded where the verifier can see it). */
EHP_INLINE __u64 copy_event_size(__u64 head, __u32 len, const __u32 cap)
{
	__u64 size = head + (len & (cap * 2 - 1));
	return size > head + cap ? head + cap : size;
}

EHP_INLINE void capture_for_verify(struct scratch *s, __u64 rsp)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct verify_scratch *vs = bpf_map_lookup_elem(&verify_scratch, &cpu);
	if (!vs)
		return;
	if (vs->counter++ % cfg.verify_every)
		return;
	__builtin_memcpy(&vs->ev, &s->ev, sizeof(vs->ev));
	vs->ev.kind = EHP_EVENT_VERIFY;
	__builtin_memcpy(vs->v.regs, s->regs, sizeof(vs->v.regs));
	vs->v.regs[EHP_REG_RSP] = rsp;
	vs->v.leaf_exact = s->leaf_exact;
	struct copy_ctx c = {.buf = vs->stack, .sp = rsp, .limit = EHP_VERIFY_STACK_MAX};
	EHP_COPY_PAGES(copy_stack_page, EHP_VERIFY_PAGES, &c);
	__u32 len = c.len > EHP_VERIFY_STACK_MAX ? EHP_VERIFY_STACK_MAX : c.len;
	vs->v.stack_len = len;
	__u64 size = copy_event_size(sizeof(vs->ev) + sizeof(vs->v), len, EHP_VERIFY_STACK_MAX);
	if (bpf_ringbuf_output(&events, vs, size, 0))
		count(EHP_STAT_EVENT_DROPS);
}

#endif /* EHPROF_BPF_VERIFY_BPF_H_ */
