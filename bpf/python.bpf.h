/* Python frames inside the native walk: when the walk reaches a CPython
 * eval loop (_PyEval_EvalFrameDefault, or its .cold part) of a process in
 * py_procs, the Python frames that eval call runs are emitted in front of
 * it, innermost first, then the native walk goes on. One frame, or one
 * thread state looked at, per bpf_loop iteration. The offsets come per
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

struct py_frame_buf {
	__u8 b[EHP_PY_FRAME_READ_MAX];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_frame_buf);
} py_buf SEC(".maps");

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
#ifdef __TARGET_ARCH_x86
	w->py.fsbase = bpf_get_current_task_btf()->thread.fsbase;
	w->py.state = PY_IDLE;
#endif
}

EHP_INLINE int py_read_u64(__u64 addr, __u64 *out)
{
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr) == 0;
}

/* A u64 at off in the frame buffer. */
EHP_INLINE __u64 py_buf_u64(struct walk *w, __u32 off)
{
	__u64 v = 0;
	if (off <= EHP_PY_FRAME_READ_MAX - 8)
		__builtin_memcpy(&v, w->py.buf + off, 8);
	return v;
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
	 * the cache when it still belongs to this thread. */
	__u32 tid = s->ev.tid;
	__u64 *cached = bpf_map_lookup_elem(&py_threads, &tid);
	w->py.state = PY_SEARCH;
	w->py.interp = 0;
	w->py.tstate = cached ? *cached : 0;
	if (!w->py.tstate && !py_read_u64(p->interp_head, &w->py.interp))
		w->py.interp = 0;
	return 1;
}

/* The thread state found: its current frame becomes the cursor. */
EHP_INLINE int py_found_thread(struct walk *w, struct ehp_py_proc *p, __u64 tstate)
{
	__u32 tid = w->s->ev.tid;
	__u64 frame;
	bpf_map_update_elem(&py_threads, &tid, &tstate, BPF_ANY);
	if (!py_read_u64(tstate + p->tstate_frame, &frame))
		return py_stop(w, EHP_PY_STOP_READ_FAULT);
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
	__u64 id = 0, next = 0;
	if (++w->py.searched > EHP_PY_THREAD_SEARCH)
		return py_stop(w, EHP_PY_STOP_NO_THREAD);
	if (!w->py.tstate) {
		/* The next interpreter's threads (the first: interp was read at
		 * the start of the search; a stale cache entry starts over). */
		if (!w->py.interp)
			return py_stop(w, EHP_PY_STOP_NO_THREAD);
		if (!py_read_u64(w->py.interp + p->interp_threads, &w->py.tstate) ||
		    !py_read_u64(w->py.interp + p->interp_next, &w->py.interp))
			return py_stop(w, EHP_PY_STOP_READ_FAULT);
		return 1;
	}
	if (py_read_u64(w->py.tstate + p->tstate_thread_id, &id) && id == w->py.fsbase)
		return py_found_thread(w, p, w->py.tstate);
	if (w->py.searched == 1 && !w->py.interp) {
		/* The cached thread state is another thread's now. */
		w->py.tstate = 0;
		if (!py_read_u64(p->interp_head, &w->py.interp))
			return py_stop(w, EHP_PY_STOP_READ_FAULT);
		return 1;
	}
	if (!py_read_u64(w->py.tstate + p->tstate_next, &next))
		return py_stop(w, EHP_PY_STOP_READ_FAULT);
	w->py.tstate = next;
	return 1;
}

/* One interpreter frame of the current eval call. */
EHP_INLINE int py_frame_step(struct walk *w, struct ehp_py_proc *p)
{
	__u64 frame = w->py.frame;
	__u32 len = p->frame_read;
	if (!frame)
		return py_stop(w, EHP_PY_STOP_FRAMES_END);
	if (len > EHP_PY_FRAME_READ_MAX)
		len = EHP_PY_FRAME_READ_MAX;
	if (bpf_probe_read_user(w->py.buf, len, (void *)frame))
		return py_stop(w, EHP_PY_STOP_READ_FAULT);
	__u64 code = py_buf_u64(w, p->frame_code);
	__u64 previous = py_buf_u64(w, p->frame_previous);
	__u32 entry_at = p->frame_entry;
	__u8 entry = entry_at < EHP_PY_FRAME_READ_MAX ? w->py.buf[entry_at] : 0;
	w->py.frame = previous;
	if (p->layout == EHP_PY_CSTACK_OWNER && entry == p->owner_cstack)
		return py_end_eval(w, PY_IDLE); /* the eval call's entry shim */
	if (!code || (code & 7))
		return py_stop(w, EHP_PY_STOP_BAD_FRAME);
	__u64 off;
	if (p->layout == EHP_PY_FRAME_OBJECTS) {
		__s32 lasti = (__s32)py_buf_u64(w, p->frame_instr);
		off = lasti < 0 ? EHP_PY_OFFSET_UNKNOWN : (__u64)lasti;
	} else {
		off = py_buf_u64(w, p->frame_instr) - code;
	}
	if (off > EHP_PY_OFFSET_UNKNOWN)
		off = EHP_PY_OFFSET_UNKNOWN;
	if (!push_frame(w, EHP_PY_FRAME(code, off)))
		return 0;
	if (p->layout == EHP_PY_FRAME_OBJECTS || (p->layout == EHP_PY_IS_ENTRY && entry))
		return py_end_eval(w, PY_IDLE);
	return 1;
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
		return py_frame_step(w, p) ? 0 : 1;
	return dwarf_step_state(w) ? 0 : 1;
}

#endif /* EHPROF_BPF_PYTHON_BPF_H_ */
