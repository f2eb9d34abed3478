/* --verify: every cfg.verify_every-th sample also sends the leaf registers
 * and up to EHP_VERIFY_STACK_MAX bytes of the user stack, for an unwind in
 * user space with libdwfl (agent/verify/). Included after bpf/walk.bpf.h. */
#ifndef EHPROF_BPF_VERIFY_BPF_H_
#define EHPROF_BPF_VERIFY_BPF_H_

/* Copies the user stack from sp upwards, a page at a time (a read that
 * would cross into an unmapped page fails whole), up to the stack top or
 * EHP_VERIFY_STACK_MAX bytes. */
struct copy_ctx {
	struct verify_scratch *vs;
	__u64 sp;
	__u32 len;
};

#ifdef EHP_COMPAT
EHP_INLINE /* called in a loop (bpf/compat.bpf.h) */
#else
static
#endif
long copy_stack_page(__u32 i, void *data)
{
	struct copy_ctx *c = data;
	__u32 off = c->len;
	if (off >= EHP_VERIFY_STACK_MAX)
		return 1;
	__u64 addr = c->sp + off;
	__u32 chunk = PAGE_SIZE_BYTES - (__u32)(addr & (PAGE_SIZE_BYTES - 1));
	off &= EHP_VERIFY_STACK_MAX - 1;
	chunk &= 8191;
	if (chunk == 0 || chunk > PAGE_SIZE_BYTES)
		return 1;
	if (bpf_probe_read_user(&c->vs->stack[off], chunk, (void *)addr))
		return 1;
	c->len = off + chunk;
	return 0;
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
	struct copy_ctx c = {.vs = vs, .sp = rsp};
#ifdef EHP_COMPAT
	for (__u32 i = 0; i < EHP_VERIFY_PAGES; i++)
		if (copy_stack_page(i, &c))
			break;
#else
	bpf_loop(EHP_VERIFY_PAGES, copy_stack_page, &c, 0);
#endif
	__u32 len = c.len > EHP_VERIFY_STACK_MAX ? EHP_VERIFY_STACK_MAX : c.len;
	vs->v.stack_len = len;
	__u64 size = sizeof(vs->ev) + sizeof(vs->v) + (len & (EHP_VERIFY_STACK_MAX * 2 - 1));
	if (size > sizeof(vs->ev) + sizeof(vs->v) + EHP_VERIFY_STACK_MAX)
		size = sizeof(vs->ev) + sizeof(vs->v) + EHP_VERIFY_STACK_MAX;
	if (bpf_ringbuf_output(&events, vs, size, 0))
		count(EHP_STAT_EVENT_DROPS);
}

#endif /* EHPROF_BPF_VERIFY_BPF_H_ */
