/* Python frames inside the native walk: when the walk reaches a CPython
 * eval loop (_PyEval_EvalFrameDefault, or its .cold part) of a process in
 * py_procs, the Python frames that eval call runs are emitted in front of
 * it, innermost first, then the native walk goes on. A step of the walk
 * whose pc is in the eval loop, or that the Python walk has work for
 * (scratch's py_eval and py_busy, compared before any call), calls
 * py_step, a global function verified once on its own, whose state is in
 * the per-CPU py_buf (bpf/python_frames.bpf.h): one thread state looked
 * at, or up to PY_EVAL_FRAMES_MAX of an eval call's frames, per bpf_loop
 * iteration; the step that ends an eval call's frames also takes its
 * native step. The offsets come per interpreter binary from user space
 * (agent/python/). Included after bpf/walk.bpf.h. */
#ifndef EHPROF_BPF_PYTHON_BPF_H_
#define EHPROF_BPF_PYTHON_BPF_H_

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EHP_PY_PROCS);
	__type(key, __u32);
	__type(value, struct ehp_py_proc);
} py_procs SEC(".maps");

/* tid -> the thread state found for it last (checked again at each use). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EHP_PY_THREADS);
	__type(key, __u32);
	__type(value, __u64);
} py_threads SEC(".maps");

#include "bpf/interp_walk.bpf.h"
#include "bpf/python_frames.bpf.h"

/* Starts the Python side of a walk of process pid: nonzero when it is on
 * (struct walk's python; read back from the map value, so a value the
 * verifier does not know and no state of its own). */
EHP_INLINE __u8 python_begin(struct scratch *s, __u32 pid)
{
	__u32 zero = 0;
	struct py_win_buf *buf = bpf_map_lookup_elem(&py_buf, &zero);
	s->py_busy = 0;
	__builtin_memset(s->py_eval, 0, sizeof(s->py_eval));
	if (!buf)
		return 0;
	buf->walk.state = PY_OFF; /* it holds another sample's walk */
	struct ehp_py_proc *proc = cfg.python ? bpf_map_lookup_elem(&py_procs, &pid) : 0;
	if (proc) {
		buf->len = 0;
		buf->proc = *proc;
		__builtin_memset(&buf->walk, 0, sizeof(buf->walk));
#ifdef __TARGET_ARCH_x86
		buf->walk.fsbase = bpf_get_current_task_btf()->thread.fsbase;
		buf->walk.state = PY_IDLE;
		s->py_eval[0] = proc->eval_begin[0];
		s->py_eval[1] = proc->eval_end[0];
		s->py_eval[2] = proc->eval_begin[1];
		s->py_eval[3] = proc->eval_end[1];
#endif
	}
	return buf->walk.state;
}

EHP_INLINE int py_read_u64(__u64 addr, __u64 *out)
{
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr) == 0;
}

/* Whether pc (a lookup address: the pc, or a return address - 1) is in
 * the eval loop, its .cold part included. */
EHP_INLINE int py_in_eval(const struct ehp_py_proc *p, __u64 pc)
{
	return (pc >= p->eval_begin[0] && pc < p->eval_end[0]) ||
	       (pc >= p->eval_begin[1] && pc < p->eval_end[1]);
}

/* At a pc in the eval loop (py_in_eval): its native frame comes off the
 * sample until its Python frames are out; the first eval loop of the
 * sample finds this thread's thread state, from the cache when it is still
 * this thread's, else by a search. */
EHP_INLINE int py_at_eval(struct py_win_buf *buf, struct scratch *s)
{
	struct ehp_py_proc *p = &buf->proc;
	struct py_walk *st = &buf->walk;
	__u64 at = buf->out.at - 1;
	if (at >= EHP_MAX_EVENT_FRAMES)
		return 0;
	EHP_CLAMP_UMAX(at, EHP_MAX_EVENT_FRAMES - 1);
	st->eval_value = s->frames[at];
	buf->out.at = (__u32)at;
	buf->out.room++;
	if (st->frame || st->searched) {
		st->state = PY_FRAMES;
		return 1;
	}
	__u32 tid = s->ev.tid;
	__u64 *cached = bpf_map_lookup_elem(&py_threads, &tid);
	__u64 frame = 0;
	int r = cached ? py_thread_frame(buf, s, *cached, st->fsbase, &frame) : 0;
	if (r < 0) {
		st->searched = 1;
		py_stop(buf, s, EHP_PY_STOP_READ_FAULT);
		return 1;
	}
	if (r > 0) {
		st->searched = 1; /* found: later eval calls go on from st->frame */
		st->frame = frame;
		st->state = PY_FRAMES;
		return 1;
	}
	st->state = PY_SEARCH;
	st->tstate = 0;
	if (!py_read_u64(p->interp_head, &st->interp))
		st->interp = 0;
	return 1;
}

/* One thread state of the interpreters' lists: this thread's? Found, it is
 * remembered for the thread and its current frame becomes the cursor. */
EHP_INLINE void py_search_step(struct py_win_buf *buf, struct scratch *s)
{
	struct ehp_py_proc *p = &buf->proc;
	struct py_walk *st = &buf->walk;
	__u64 id = 0, next = 0, frame = 0;
	if (++st->searched > EHP_PY_THREAD_SEARCH) {
		py_stop(buf, s, EHP_PY_STOP_NO_THREAD);
		return;
	}
	if (!st->tstate) {
		/* The next interpreter's threads (the first: interp was read at
		 * the start of the search). */
		if (!st->interp)
			py_stop(buf, s, EHP_PY_STOP_NO_THREAD);
		else if (!py_read_u64(st->interp + p->interp_threads, &st->tstate) ||
			 !py_read_u64(st->interp + p->interp_next, &st->interp))
			py_stop(buf, s, EHP_PY_STOP_READ_FAULT);
		return;
	}
	if (py_read_u64(st->tstate + p->tstate_thread_id, &id) && id == st->fsbase) {
		__u32 tid = s->ev.tid;
		bpf_map_update_elem(&py_threads, &tid, &st->tstate, BPF_ANY);
		/* Its frame and data stack as a cached one's are read. */
		if (py_thread_frame(buf, s, st->tstate, st->fsbase, &frame) <= 0) {
			py_stop(buf, s, EHP_PY_STOP_READ_FAULT);
			return;
		}
		st->frame = frame;
		st->state = PY_FRAMES;
		return;
	}
	if (!py_read_u64(st->tstate + p->tstate_next, &next))
		py_stop(buf, s, EHP_PY_STOP_READ_FAULT);
	else
		st->tstate = next;
}

/* The Python side of a walk step whose next frame slot is at, n frames
 * into the walk, at lookup address pc: see PY_STEP_NATIVE. Called only
 * for a pc in the eval loop or while scratch's py_busy says the Python walk
 * has steps of its own (a thread search, an eval call's further frames);
 * it keeps py_busy, and empties py_eval once the Python walk is off. */
__noinline int py_step(__u32 at, __u32 n, __u64 pc)
{
	__u32 zero = 0;
	struct py_win_buf *buf = bpf_map_lookup_elem(&py_buf, &zero);
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!buf || !s)
		return PY_STEP_NATIVE;
	if (buf->walk.state == PY_OFF || (buf->walk.state == PY_IDLE && (n == 0 || !py_in_eval(&buf->proc, pc)))) {
		s->py_busy = 0;
		return PY_STEP_NATIVE;
	}
	interp_out_begin(&buf->out, at, n);
	/* Each part runs on from the one before it in the same step. */
	if (buf->walk.state == PY_IDLE && !py_at_eval(buf, s))
		return PY_STEP_NATIVE;
	if (buf->walk.state == PY_SEARCH)
		py_search_step(buf, s);
	if (buf->walk.state == PY_FRAMES && !buf->out.full)
		py_frames(buf, s);
	int r = interp_step_result(&buf->out, at, buf->walk.native_next);
	buf->walk.native_next = 0;
	s->py_busy = buf->walk.state == PY_SEARCH || buf->walk.state == PY_FRAMES;
	if (buf->walk.state == PY_OFF)
		__builtin_memset(s->py_eval, 0, sizeof(s->py_eval));
	return r;
}

/* A step of the user walk that knows Python: Python frames while inside
 * an eval call, else one CFI step. */
static long py_dwarf_step(__u32 i, void *data)
{
	struct walk *w = data;
	struct scratch *s = w->s;
	if (walk_out_of_time(w, i))
		return 1;
	if (cfg.python && w->python) {
		__u64 pc = s->exact ? s->pc : s->pc - 1;
		if (s->py_busy || (w->n && (interp_in(pc, s->py_eval[0], s->py_eval[1]) ||
					    interp_in(pc, s->py_eval[2], s->py_eval[3])))) {
			long r = interp_apply(w, py_step(w->base + w->n, w->n, pc));
			if (r >= 0)
				return r;
		}
	}
	return dwarf_step_state(w) ? 0 : 1;
}

#endif /* EHPROF_BPF_PYTHON_BPF_H_ */
