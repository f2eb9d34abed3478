/* One Perl run loop call's frames, read inside pl_step (bpf/perl.bpf.h, a
 * global function verified once on its own) from the thread's context
 * stack: the per-CPU state of the Perl walk, the window contexts are read
 * through (PL_WIN bytes a read, from the current context down), and the
 * stop markers. Included by bpf/perl.bpf.h. */
#ifndef EHPROF_BPF_PERL_FRAMES_BPF_H_
#define EHPROF_BPF_PERL_FRAMES_BPF_H_

/* Contexts per pl_step (each step costs a bpf_loop iteration and
 * pl_step's setup); bytes of contexts read at once (78 of 5.36's 104-byte
 * contexts: bench/perl_cost.py's 51 subs are one read, where a read costs
 * about what a few hundred bytes' copy does). */
#define PL_STEP_CX 32
#define PL_WIN 8192
/* Contexts in a row that give no frame (loops, blocks) at most: a sub's
 * body nests a few; more is memory no interpreter made, and reading it
 * would spend the walk's time budget. */
#define PL_MAX_BARE 64
/* The bytes of the interpreter read at once for PL_curstackinfo and
 * PL_curcop where they lie that close. */
#define PL_INTERP_READ 256

/* cop.h: a context's type in the low 4 bits of its first byte. */
#define PL_CXTYPEMASK 0xf
#define PL_CXt_SUB 9
#define PL_CXt_EVAL 11
#define PL_CXt_SUBST 12
/* The faked re-entry of a sub for a regex code block: no call of its own. */
#define PL_CXp_SUB_RE_FAKE 0x80

enum pl_walk_state {
	PL_OFF = 0,    /* not a Perl process, the Perl walk stopped or done */
	PL_IDLE = 1,   /* native frames; look for the run loop */
	PL_FRAMES = 2, /* pushing one run loop call's frames */
};

/* Per CPU: the sample's Perl process (copied at its start), the walk's
 * place in the context stack and the window; in a map value, so none of it
 * multiplies the native walk's verifier states. */
struct pl_buf {
	struct ehp_perl_proc proc;
	struct py_out out;
	__u64 fsbase;
	__u64 vm_value;	 /* the run loop's native frame, pushed after its frames */
	__u64 si;	 /* the stackinfo walked */
	__u64 cxstack;	 /* its contexts */
	__u64 prev;	 /* the stackinfo below it */
	__u64 cop;	 /* the statement the next frame is at (0: unknown) */
	__u64 base_cop;	 /* the oldcop of the last context looked at */
	__u64 last_cop;	 /* the COP whose line was read last (recursion repeats one) */
	__u32 last_line;
	__s32 cxix;	 /* the next context's index */
	__u32 looked;	 /* contexts looked at in this sample */
	__u32 bare;	 /* contexts in a row that gave no frame */
	__u32 pid;
	__u8 state;	 /* enum pl_walk_state */
	__u8 native_next; /* the run loop call is done: its native step follows */
	__u8 started;	 /* the interpreter was read */
	__u8 pad;
	__u64 win_lo;	 /* the window: contexts from win_lo */
	__u32 win_len;
	__u32 pad2;
	__u64 si_words[EHP_PERL_SI_READ / 8];
	__u64 tls_words[3]; /* interp_tls_slot's */
	__u8 win[PL_WIN];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct pl_buf);
} pl_buf SEC(".maps");

/* One frame word into the sample (0 when it does not fit: out.full). */
EHP_INLINE int pl_push(struct pl_buf *buf, struct scratch *s, __u64 value)
{
	__u32 k = buf->out.k;
	__u64 at = buf->out.at + k;
	if (k >= buf->out.room || at >= EHP_MAX_EVENT_FRAMES) {
		buf->out.full = 1;
		return 0;
	}
	EHP_CLAMP_UMAX(at, EHP_MAX_EVENT_FRAMES - 1); /* in the register indexing */
	s->frames[at] = value;
	buf->out.k = k + 1;
	return 1;
}

/* The run loop call is done (or given up): its native frame follows. */
EHP_INLINE void pl_end_vm(struct pl_buf *buf, struct scratch *s, __u8 next_state)
{
	buf->state = next_state;
	buf->native_next = 1;
	pl_push(buf, s, buf->vm_value);
}

/* The Perl walk cannot go on: a marker saying why, the run loop's frame,
 * native frames only from here. */
EHP_INLINE void pl_stop(struct pl_buf *buf, struct scratch *s, __u32 why)
{
	if (pl_push(buf, s, EHP_INTERP_FRAME(EHP_INTERP_PERL, 0ull, why)))
		pl_end_vm(buf, s, PL_OFF);
}

/* The u64 at off (below EHP_PERL_SI_READ) of the stackinfo read last. */
EHP_INLINE __u64 pl_si_u64(struct pl_buf *buf, __u32 off)
{
	__u32 i = off / 8;
	if (i >= EHP_PERL_SI_READ / 8)
		return 0;
	return buf->si_words[i];
}

/* Makes si the stackinfo walked: its contexts, top index and the one below. */
EHP_INLINE int pl_load_si(struct pl_buf *buf, __u64 si)
{
	struct ehp_perl_proc *p = &buf->proc;
	if (!si || (si & 7) || bpf_probe_read_user(buf->si_words, sizeof(buf->si_words), (void *)si))
		return 0;
	buf->si = si;
	buf->cxstack = pl_si_u64(buf, p->si_cxstack);
	buf->prev = pl_si_u64(buf, p->si_prev);
	buf->cxix = (__s32)(pl_si_u64(buf, p->si_cxix & ~7u) >> ((p->si_cxix & 4) * 8));
	buf->base_cop = 0;
	buf->win_len = 0;
	return 1;
}

/* Where the context at cx is in the window, -1 when it cannot be read. A
 * context the window does not hold reads a new one that ends with it,
 * from at most PL_WIN below (never below the context array). */
EHP_INLINE int pl_view(struct pl_buf *buf, __u64 cx)
{
	__u64 off = cx - buf->win_lo;
	if (cx >= buf->win_lo && off + EHP_PERL_CX_READ <= buf->win_len)
		return (int)off;
	__u64 lo = buf->cxstack;
	if (cx + EHP_PERL_CX_READ - lo > PL_WIN)
		lo = cx + EHP_PERL_CX_READ - PL_WIN;
	__u64 size = cx + EHP_PERL_CX_READ - lo;
	EHP_CLAMP_UMAX(size, PL_WIN);
	if (size < EHP_PERL_CX_READ || bpf_probe_read_user(buf->win, size, (void *)lo)) {
		buf->win_len = 0;
		return -1;
	}
	buf->win_lo = lo;
	buf->win_len = (__u32)size;
	return (int)(cx - lo);
}

/* The u64 at off (below EHP_PERL_CX_READ) of the context at base. */
EHP_INLINE __u64 pl_cx_u64(struct pl_buf *buf, __u32 base, __u32 off)
{
	__u32 at = base + (off & (128 - 8));
	if (at > PL_WIN - 8)
		return 0;
	return *(__u64 *)(buf->win + (at & ~7u));
}

/* The line of the statement cop, as a frame's aux. */
EHP_INLINE __u32 pl_line(struct pl_buf *buf, __u64 cop)
{
	__u32 line = EHP_INTERP_AUX_UNKNOWN;
	if (!cop)
		return line;
	if (cop == buf->last_cop)
		return buf->last_line;
	if (bpf_probe_read_user(&line, sizeof(line), (void *)(cop + buf->proc.cop_line)) ||
	    line >= EHP_PERL_AUX_BLOCK)
		line = EHP_INTERP_AUX_UNKNOWN;
	buf->last_cop = cop;
	buf->last_line = line;
	return line;
}

#endif /* EHPROF_BPF_PERL_FRAMES_BPF_H_ */
