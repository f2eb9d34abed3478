/* What the interpreter walks inside the native walk share (Python's
 * py_step, Ruby's rb_step): a step's frames go into the sample from the
 * slot the walk is at, as many as the walk's depth limit leaves room for
 * (struct py_out); the step's result tells the native walk how many it
 * added and what to do next; the walk's dwarf step hook applies it. Each
 * interpreter's step is a global function (verified once on its own) that
 * the hook calls only while the pc is in its interpreter loop or its walk
 * has steps of its own. Included by bpf/python.bpf.h before the walks. */
#ifndef EHPROF_BPF_INTERP_WALK_BPF_H_
#define EHPROF_BPF_INTERP_WALK_BPF_H_

#include "bpf/python_state.bpf.h"

/* A step's result: 0, the step is the native walk's; else what it did,
 * (PY_ACT_* << 16) | (1 + how many frames it added, -1 when it only took
 * the interpreter loop's frame off). */
#define PY_STEP_NATIVE 0
enum py_step_act {
	PY_ACT_NEXT = 1,   /* go on with the next step */
	PY_ACT_FULL = 2,   /* a frame did not fit: the walk ends at its depth limit */
	PY_ACT_NATIVE = 3, /* the interpreter call is done: its native step follows in this step */
};

/* Whether pc lies in [lo, hi). */
EHP_INLINE int interp_in(__u64 pc, __u64 lo, __u64 hi)
{
	return pc >= lo && pc < hi;
}

/* A step's frames go from slot at, n frames into the walk. */
EHP_INLINE void interp_out_begin(struct py_out *out, __u32 at, __u32 n)
{
	__u32 limit = cfg.max_frames < EHP_MAX_USER_FRAMES ? cfg.max_frames : EHP_MAX_USER_FRAMES;
	out->at = at;
	out->room = n < limit ? limit - n : 0;
	out->k = 0;
	out->full = 0;
}

/* One frame word into the sample (0 when it does not fit: out->full). */
EHP_INLINE int interp_push(struct py_out *out, struct scratch *s, __u64 value)
{
	__u32 k = out->k;
	__u64 at = out->at + k;
	if (k >= out->room || at >= EHP_MAX_EVENT_FRAMES) {
		out->full = 1;
		return 0;
	}
	EHP_CLAMP_UMAX(at, EHP_MAX_EVENT_FRAMES - 1); /* in the register indexing */
	s->frames[at] = value;
	out->k = k + 1;
	return 1;
}

/* The farthest below the thread pointer a static TLS block is taken to
 * lie (glibc's static TLS: the modules loaded at start, and a surplus). */
#define INTERP_STATIC_TLS_MAX (1u << 20)

/* The address of a library's TLS variable (its module id and offset in
 * the module's block) in the thread at fsbase: fsbase - back once learned,
 * else through glibc's DTV (fsbase + 8: the DTV; its dtv_t {val, to_free}
 * at 16 * module: the block). w: three words off the stack (rb_step and
 * pl_step have none to spare under 6.1's 512 bytes of a call chain); w[0]
 * then holds the distance to learn, nonzero when the DTV says the block is
 * static TLS (to_free 0) just below the thread pointer, the same distance
 * for every thread of the process. 0 when unreadable. */
EHP_INLINE __u64 interp_tls_slot(__u64 fsbase, __u64 module, __u64 offset, __u32 back, __u64 *w)
{
	w[0] = 0;
	if (back)
		return fsbase - back;
	if (bpf_probe_read_user(&w[0], 8, (void *)(fsbase + 8)) ||
	    bpf_probe_read_user(&w[1], 16, (void *)(w[0] + module * 16))) {
		w[0] = 0;
		return 0;
	}
	__u64 slot = w[1] + offset;
	w[0] = !w[2] && slot < fsbase && fsbase - slot <= INTERP_STATIC_TLS_MAX && !(slot & 7) ? fsbase - slot : 0;
	return slot;
}

/* The step's result (see PY_STEP_NATIVE) for a step that began at slot
 * at; native_next: its interpreter call is done. */
EHP_INLINE int interp_step_result(struct py_out *out, __u32 at, __u8 native_next)
{
	__u32 delta = out->at + out->k + 1 - at; /* frames added, + 1 */
	__u32 act = out->full ? PY_ACT_FULL : native_next ? PY_ACT_NATIVE : PY_ACT_NEXT;
	return (act << 16) | (delta & 0xffff);
}

/* Applies a step's result r to the walk: -1 when the native step is to
 * follow in this step, else what the bpf_loop callback returns (1: the
 * walk ends at its depth limit, 0: the next step). */
EHP_INLINE long interp_apply(struct walk *w, int r)
{
	if (r == PY_STEP_NATIVE)
		return -1;
	__u32 act = (__u32)r >> 16;
	w->n = w->n + ((__u32)r & 0xffff) - 1;
	if (act == PY_ACT_FULL) {
		w->stop = EHP_STOP_DEPTH_LIMIT;
		return 1;
	}
	return act == PY_ACT_NATIVE ? -1 : 0;
}

#endif /* EHPROF_BPF_INTERP_WALK_BPF_H_ */
