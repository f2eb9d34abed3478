/* Python frames inside the native walk: when the walk reaches a CPython
 * eval loop (_PyEval_EvalFrameDefault, or its .cold part) of a process in
 * py_procs, the Python frames that eval call runs are emitted in front of
 * it, innermost first, then the native walk goes on. One thread state
 * looked at, or an eval call's frames (bpf/python_frames.bpf.h), per
 * bpf_loop iteration. The offsets come per
 * interpreter binary from user space (agent/python/). Included after
 * bpf/walk.bpf.h. */
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

#include "bpf/python_frames.bpf.h"

/* Starts the Python side of a walk of process w->pid. */
EHP_INLINE void python_begin(struct walk *w)
{
	__u32 zero = 0;
	w->py.state = PY_OFF;
	if (!cfg.python)
		return;
	w->py.proc = bpf_map_lookup_elem(&py_procs, &w->pid);
	if (!w->py.proc)
		return;
	w->py.buf = bpf_map_lookup_elem(&py_buf, &zero);
	if (!w->py.buf)
		return;
	w->py.buf->len = 0; /* it holds another sample's bytes */
	w->py.buf->proc = *w->py.proc;
#ifdef __TARGET_ARCH_x86
	w->py.fsbase = bpf_get_current_task_btf()->thread.fsbase;
	w->py.state = PY_IDLE;
#endif
}

EHP_INLINE int py_read_u64(__u64 addr, __u64 *out)
{
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr) == 0;
}

/* The eval call's Python frames are done (or given up): its native frame
 * follows them, then the native walk resumes from it. */
EHP_INLINE int py_end_eval(struct walk *w, __u8 next_state)
{
	w->py.state = next_state;
	w->py.native_next = 1;
	return push_frame(w, w->py.eval_value);
}

/* The Python walk cannot go on: a marker frame saying why, the eval loop's
 * native frame, and native frames only from here. */
EHP_INLINE int py_stop(struct walk *w, __u32 why)
{
	if (!push_frame(w, EHP_PY_FRAME(0ull, why)))
		return 0;
	return py_end_eval(w, PY_OFF);
}

/* The thread state cached for this thread, if it is still this thread's
 * (py_thread_frame): its current frame becomes the cursor, the cache left
 * as it is. 0 when the cache is stale (the caller searches), else 1. */
EHP_INLINE int py_cached_thread(struct walk *w, __u64 tstate)
{
	int r = py_thread_frame(tstate, w->py.fsbase);
	if (r == 0)
		return 0;
	w->py.searched = 1; /* found: later eval calls go on from w->py.frame */
	if (r < 0) {
		py_stop(w, EHP_PY_STOP_READ_FAULT);
		return 1;
	}
	w->py.frame = w->py.buf->next;
	w->py.state = PY_FRAMES;
	return 1;
}

/* At the start of a step: whether the pc is in the eval loop, which then
 * takes its native frame off the stack until its Python frames are out. */
EHP_INLINE int python_at_eval(struct walk *w)
{
	struct ehp_py_proc *p = w->py.proc;
	struct scratch *s = w->s;
	if (w->py.native_next || !p) {
		w->py.native_next = 0;
		return 0;
	}
	__u64 pc = s->exact ? s->pc : s->pc - 1;
	if (!((pc >= p->eval_begin[0] && pc < p->eval_end[0]) ||
	      (pc >= p->eval_begin[1] && pc < p->eval_end[1])))
		return 0;
	__u32 at = w->base + w->n - 1;
	if (w->n == 0 || at >= EHP_MAX_EVENT_FRAMES)
		return 0;
	w->py.eval_value = s->frames[at];
	w->n--;
	if (w->py.frame || w->py.searched) {
		w->py.state = PY_FRAMES;
		return 1;
	}
	/* The first eval loop of the sample: this thread's thread state, from
	 * the cache when it still belongs to this thread, else searched. */
	__u32 tid = s->ev.tid;
	__u64 *cached = bpf_map_lookup_elem(&py_threads, &tid);
	if (cached && py_cached_thread(w, *cached))
		return 1;
	w->py.state = PY_SEARCH;
	w->py.tstate = 0;
	if (!py_read_u64(p->interp_head, &w->py.interp))
		w->py.interp = 0;
	return 1;
}

/* A search step reached the thread state of this thread (whose frame
 * field holds tframe): remembered for the thread, and its current frame
 * becomes the cursor. */
EHP_INLINE int py_found_thread(struct walk *w, struct ehp_py_proc *p, __u64 tstate, __u64 tframe)
{
	__u32 tid = w->s->ev.tid;
	__u64 frame = tframe;
	bpf_map_update_elem(&py_threads, &tid, &tstate, BPF_ANY);
	if (p->cframe_frame != EHP_PY_NO_CFRAME && frame &&
	    !py_read_u64(frame + p->cframe_frame, &frame))
		return py_stop(w, EHP_PY_STOP_READ_FAULT);
	w->py.frame = frame;
	w->py.state = PY_FRAMES;
	return 1;
}

/* One thread state of the interpreters' lists: this thread's? */
EHP_INLINE int py_search_step(struct walk *w, struct ehp_py_proc *p)
{
	__u64 id = 0, next = 0, tframe = 0;
	if (++w->py.searched > EHP_PY_THREAD_SEARCH)
		return py_stop(w, EHP_PY_STOP_NO_THREAD);
	if (!w->py.tstate) {
		/* The next interpreter's threads (the first: interp was read at
		 * the start of the search). */
		if (!w->py.interp)
			return py_stop(w, EHP_PY_STOP_NO_THREAD);
		if (!py_read_u64(w->py.interp + p->interp_threads, &w->py.tstate) ||
		    !py_read_u64(w->py.interp + p->interp_next, &w->py.interp))
			return py_stop(w, EHP_PY_STOP_READ_FAULT);
		return 1;
	}
	if (py_read_u64(w->py.tstate + p->tstate_thread_id, &id) && id == w->py.fsbase) {
		if (!py_read_u64(w->py.tstate + p->tstate_frame, &tframe))
			return py_stop(w, EHP_PY_STOP_READ_FAULT);
		return py_found_thread(w, p, w->py.tstate, tframe);
	}
	if (!py_read_u64(w->py.tstate + p->tstate_next, &next))
		return py_stop(w, EHP_PY_STOP_READ_FAULT);
	w->py.tstate = next;
	return 1;
}

/* The current eval call's frames (up to PY_EVAL_FRAMES_MAX a step). */
EHP_INLINE int py_frame_step(struct walk *w)
{
	__u32 limit = cfg.max_frames < EHP_MAX_USER_FRAMES ? cfg.max_frames : EHP_MAX_USER_FRAMES;
	__u32 room = w->n < limit ? limit - w->n : 0;
	int r = py_eval_frames(w->py.frame, w->base + w->n, room);
	if (r < 0)
		return py_stop(w, EHP_PY_STOP_READ_FAULT);
	__u32 n = (__u32)r & 0xffff, status = (__u32)r >> 16;
	if (n > room)
		n = room;
	w->n += n;
	w->py.frame = w->py.buf->next;
	if (status == PY_EVAL_DONE)
		return py_end_eval(w, PY_IDLE);
	if (status == PY_EVAL_MORE)
		return 1;
	if (status == PY_EVAL_FULL) {
		w->stop = EHP_STOP_DEPTH_LIMIT;
		return 0;
	}
	return py_stop(w, status);
}

/* A step of the user walk that knows Python: Python frames while inside
 * an eval call, else one CFI step. */
static long py_dwarf_step(__u32 i, void *data)
{
	struct walk *w = data;
	struct ehp_py_proc *p = w->py.proc;
	if (w->py.state == PY_IDLE && python_at_eval(w))
		return 0;
	if (p && w->py.state == PY_SEARCH)
		return py_search_step(w, p) ? 0 : 1;
	if (p && w->py.state == PY_FRAMES)
		return py_frame_step(w) ? 0 : 1;
	return dwarf_step_state(w) ? 0 : 1;
}

#endif /* EHPROF_BPF_PYTHON_BPF_H_ */
