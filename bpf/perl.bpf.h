/* Perl frames inside the native walk: when the walk reaches the run loop
 * (Perl_runops_standard) of a process in perl_procs, the subs that run
 * loop call runs are pushed leaf-side of its native frame, from the
 * thread's context stack, then the native walk goes on. Perl calls a sub
 * without a C call of its own (pp_entersub pushes a context and the same
 * loop goes on), so one run loop call runs many subs; C code that runs
 * Perl code (call_sv from an XS function, sort's comparison, MULTICALL as
 * List::Util does) starts another run loop, on a stackinfo of its own or
 * not, and its sub's context has no return op (blk_sub.retop 0). So the
 * contexts are walked from the top of PL_curstackinfo down: a sub's
 * context gives a frame (its CV, at the line of the statement the walk
 * holds: PL_curcop for the first, then the context's blk_oldcop, the
 * statement that called it); a sub with no return op ends the run loop
 * call; a stackinfo's bottom ends it too, with a frame for the code that
 * ran outside any sub there (the main program, a sort block: a COP
 * frame), and the walk goes on in si_prev at the next run loop. An eval's
 * context is a frame of its own (its code's COP). The interpreter is the
 * thread's PL_current_context (libperl's TLS, through the thread's own
 * fsbase), so every thread of an ithreads program has its own.
 * pl_step is a global function verified once on its own; up to PL_STEP_CX
 * contexts a bpf_loop step. The offsets come per libperl from user space
 * (agent/perl/). Included after bpf/ruby.bpf.h. */
#ifndef EHPROF_BPF_PERL_BPF_H_
#define EHPROF_BPF_PERL_BPF_H_

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EHP_PERL_PROCS);
	__type(key, __u32);
	__type(value, struct ehp_perl_proc);
} perl_procs SEC(".maps");

#include "bpf/perl_frames.bpf.h"

/* Starts the Perl side of a walk of process pid (scratch's pl_vm: its run
 * loop, zeros when the walk is off). */
EHP_INLINE void perl_begin(struct scratch *s, __u32 pid)
{
	__u32 zero = 0;
	struct pl_buf *buf = bpf_map_lookup_elem(&pl_buf, &zero);
	s->pl_busy = 0;
	s->pl_vm[0] = 0;
	s->pl_vm[1] = 0;
	if (!buf)
		return;
	buf->state = PL_OFF;
#ifdef __TARGET_ARCH_x86
	struct ehp_perl_proc *proc = bpf_map_lookup_elem(&perl_procs, &pid);
	if (proc) {
		buf->proc = *proc;
		buf->fsbase = bpf_get_current_task_btf()->thread.fsbase;
		buf->pid = pid;
		buf->started = 0;
		buf->looked = 0;
		buf->bare = 0;
		buf->win_len = 0;
		buf->last_cop = 0;
		buf->state = PL_IDLE;
		s->pl_vm[0] = proc->runops_begin;
		s->pl_vm[1] = proc->runops_end;
	}
#endif
}

/* The address of the thread's PL_current_context slot (interp_tls_slot),
 * and the distance learned for the process's later walks. */
EHP_INLINE __u64 pl_context_slot(struct pl_buf *buf)
{
	struct ehp_perl_proc *p = &buf->proc;
	__u64 slot = interp_tls_slot(buf->fsbase, p->tls_module, p->tls_offset, p->tls_back, buf->tls_words);
	if (buf->tls_words[0]) {
		struct ehp_perl_proc *live = bpf_map_lookup_elem(&perl_procs, &buf->pid);
		if (live && live->tls_module == p->tls_module && live->tls_offset == p->tls_offset)
			live->tls_back = (__u32)buf->tls_words[0];
	}
	return slot;
}

/* The thread's interpreter: its current stackinfo and statement, in one
 * read where they lie within PL_INTERP_READ bytes of each other, a whole
 * number of words apart (into the window, which is read anew after). */
EHP_INLINE int pl_find_interp(struct pl_buf *buf)
{
	struct ehp_perl_proc *p = &buf->proc;
	__u64 slot = pl_context_slot(buf), interp = 0, si = 0;
	buf->cop = 0;
	if (!slot || bpf_probe_read_user(&interp, 8, (void *)slot) || !interp)
		return 0;
	__u32 lo = p->i_curstackinfo < p->i_curcop ? p->i_curstackinfo : p->i_curcop;
	__u32 si_at = p->i_curstackinfo - lo, cop_at = p->i_curcop - lo;
	if (si_at <= PL_INTERP_READ - 8 && cop_at <= PL_INTERP_READ - 8 && !((si_at | cop_at) & 7)) {
		__u32 size = (si_at > cop_at ? si_at : cop_at) + 8;
		EHP_CLAMP_UMAX(size, PL_INTERP_READ);
		if (bpf_probe_read_user(buf->win, size, (void *)(interp + lo)))
			return 0;
		si = *(__u64 *)(buf->win + (si_at & (PL_INTERP_READ - 8)));
		buf->cop = *(__u64 *)(buf->win + (cop_at & (PL_INTERP_READ - 8)));
	} else if (bpf_probe_read_user(&si, 8, (void *)(interp + p->i_curstackinfo)) ||
		   bpf_probe_read_user(&buf->cop, 8, (void *)(interp + p->i_curcop))) {
		return 0;
	}
	return pl_load_si(buf, si);
}

/* The stackinfo's contexts are all walked: the one below goes on at the
 * next run loop, from the statement that began this one's first context
 * (base_cop); with none below, the Perl frames are done. */
EHP_INLINE void pl_pop_si(struct pl_buf *buf, struct scratch *s)
{
	if (!buf->prev) {
		pl_end_vm(buf, s, PL_OFF);
		return;
	}
	buf->cop = buf->base_cop;
	if (!pl_load_si(buf, buf->prev)) {
		pl_stop(buf, s, EHP_PERL_STOP_READ_FAULT);
		return;
	}
	pl_end_vm(buf, s, PL_IDLE);
}

/* One context; 0 when the run loop call's frames are done (or the walk
 * stopped, or a frame did not fit). */
EHP_INLINE int pl_context(struct pl_buf *buf, struct scratch *s)
{
	struct ehp_perl_proc *p = &buf->proc;
	__u64 cx = buf->cxstack + (__u64)(__u32)buf->cxix * p->cx_size;
	int at = pl_view(buf, cx);
	if (at < 0) {
		pl_stop(buf, s, EHP_PERL_STOP_READ_FAULT);
		return 0;
	}
	__u32 base = (__u32)at;
	__u8 type = (__u8)pl_cx_u64(buf, base, 0);
	__u8 kind = type & PL_CXTYPEMASK;
	if (kind == PL_CXt_SUBST || (kind == PL_CXt_SUB && (type & PL_CXp_SUB_RE_FAKE))) {
		buf->cxix--;
		return 1;
	}
	__u64 oldcop = pl_cx_u64(buf, base, p->cx_oldcop);
	__u64 word = 0;
	if (kind == PL_CXt_SUB)
		word = EHP_INTERP_FRAME(EHP_INTERP_PERL, pl_cx_u64(buf, base, p->cx_cv), pl_line(buf, buf->cop));
	else if (kind == PL_CXt_EVAL && buf->cop)
		word = EHP_INTERP_FRAME(EHP_INTERP_PERL, buf->cop, EHP_PERL_AUX_EVAL);
	if (word && !pl_push(buf, s, word))
		return 0; /* the depth limit: this context is taken again by no one */
	if (word)
		buf->bare = 0;
	buf->cxix--;
	buf->base_cop = oldcop;
	if (kind != PL_CXt_SUB && kind != PL_CXt_EVAL)
		return 1;
	buf->cop = oldcop;
	if (kind == PL_CXt_SUB && !pl_cx_u64(buf, base, p->cx_retop)) {
		/* C code called this sub: its run loop call ends here. */
		if (buf->cxix < 0)
			pl_pop_si(buf, s);
		else
			pl_end_vm(buf, s, PL_IDLE);
		return 0;
	}
	return 1;
}

/* The current run loop call's next contexts (up to PL_STEP_CX). */
EHP_INLINE void pl_frames(struct pl_buf *buf, struct scratch *s)
{
	struct ehp_perl_proc *p = &buf->proc;
#pragma clang loop unroll(disable)
	for (int i = 0; i < PL_STEP_CX; i++) {
		if (++buf->looked > EHP_PERL_MAX_CONTEXTS || ++buf->bare > PL_MAX_BARE) {
			pl_stop(buf, s, EHP_PERL_STOP_TOO_DEEP);
			return;
		}
		if (buf->cxix < 0) {
			/* Code outside any sub of this stackinfo's own. */
			if (buf->cop && !pl_push(buf, s, EHP_INTERP_FRAME(EHP_INTERP_PERL, buf->cop, EHP_PERL_AUX_BLOCK)))
				return;
			pl_pop_si(buf, s);
			return;
		}
		if (p->cx_size < EHP_PERL_CX_READ || p->cx_size > 256 || buf->cxix > (1 << 20)) {
			pl_stop(buf, s, EHP_PERL_STOP_BAD_CONTEXT);
			return;
		}
		if (!pl_context(buf, s))
			return;
	}
}

/* The Perl side of a walk step whose next frame slot is at, n frames into
 * the walk, at lookup address pc: as rb_step, PY_STEP_NATIVE or
 * (PY_ACT_* << 16) | (1 + frames added). */
__noinline int pl_step(__u32 at, __u32 n, __u64 pc)
{
	__u32 zero = 0;
	struct pl_buf *buf = bpf_map_lookup_elem(&pl_buf, &zero);
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!buf || !s)
		return PY_STEP_NATIVE;
	if (buf->state == PL_OFF ||
	    (buf->state == PL_IDLE && (n == 0 || pc < buf->proc.runops_begin || pc >= buf->proc.runops_end))) {
		s->pl_busy = 0;
		return PY_STEP_NATIVE;
	}
	__u32 limit = cfg.max_frames < EHP_MAX_USER_FRAMES ? cfg.max_frames : EHP_MAX_USER_FRAMES;
	buf->out.room = n < limit ? limit - n : 0;
	buf->out.k = 0;
	buf->out.full = 0;
	buf->out.at = at;
	if (buf->state == PL_IDLE) {
		/* The run loop's frame comes off until its subs are in. */
		__u64 prev = at - 1;
		if (prev >= EHP_MAX_EVENT_FRAMES)
			return PY_STEP_NATIVE;
		EHP_CLAMP_UMAX(prev, EHP_MAX_EVENT_FRAMES - 1);
		buf->vm_value = s->frames[prev];
		buf->out.at = (__u32)prev;
		buf->out.room++;
		buf->state = PL_FRAMES;
		if (!buf->started) {
			buf->started = 1;
			if (!pl_find_interp(buf))
				pl_stop(buf, s, EHP_PERL_STOP_NO_INTERP);
		}
	}
	if (buf->state == PL_FRAMES && !buf->out.full)
		pl_frames(buf, s);
	__u32 delta = buf->out.at + buf->out.k + 1 - at;
	__u32 act = buf->out.full ? PY_ACT_FULL : buf->native_next ? PY_ACT_NATIVE : PY_ACT_NEXT;
	buf->native_next = 0;
	s->pl_busy = buf->state == PL_FRAMES;
	if (buf->state == PL_OFF)
		s->pl_vm[0] = s->pl_vm[1] = 0;
	return (act << 16) | (delta & 0xffff);
}

/* A step of the user walk that knows Perl, then Ruby's (rb_dwarf_step). */
static long pl_dwarf_step(__u32 i, void *data)
{
	struct walk *w = data;
	struct scratch *s = w->s;
	/* pl_vm is [0, 0) while the Perl walk is off. */
	if (s->pl_vm[1]) {
		__u64 pc = s->exact ? s->pc : s->pc - 1;
		if (s->pl_busy || (w->n && pc >= s->pl_vm[0] && pc < s->pl_vm[1])) {
			int r = pl_step(w->base + w->n, w->n, pc);
			if (r != PY_STEP_NATIVE) {
				__u32 act = (__u32)r >> 16;
				w->n = w->n + ((__u32)r & 0xffff) - 1;
				if (act == PY_ACT_FULL) {
					w->stop = EHP_STOP_DEPTH_LIMIT;
					return 1;
				}
				if (act != PY_ACT_NATIVE)
					return 0;
			}
		}
	}
	return rb_dwarf_step(i, data);
}

#endif /* EHPROF_BPF_PERL_BPF_H_ */
