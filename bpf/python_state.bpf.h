/* The Python walk's state during one user walk. It lives in the per-CPU
 * py_buf map value (bpf/python_frames.bpf.h), not in struct walk on the
 * stack: the verifier tracks no map value's contents, so the Python state
 * multiplies none of the native walk's verifier states (Linux 6.12 found
 * the sampler too big while it sat in struct walk). Included by
 * bpf/python_frames.bpf.h. */
#ifndef EHPROF_BPF_PYTHON_STATE_BPF_H_
#define EHPROF_BPF_PYTHON_STATE_BPF_H_

enum py_walk_state {
	PY_OFF = 0,    /* not a Python process, or the Python walk stopped */
	PY_IDLE = 1,   /* native frames; look for the eval loop */
	PY_SEARCH = 2, /* looking for this thread's thread state */
	PY_FRAMES = 3, /* emitting one eval call's Python frames */
};

struct py_walk {
	__u64 frame;	  /* the next interpreter frame */
	__u64 interp;	  /* PY_SEARCH: the interpreter being searched */
	__u64 tstate;	  /* PY_SEARCH: the thread state to look at next */
	__u64 eval_value; /* the eval loop's native frame, pushed after its Python frames */
	__u64 fsbase;	  /* this thread's pthread_self() */
	/* 3.11+: the thread's current data stack chunk, [chunk_lo, chunk_hi)
	 * (datastack_chunk to datastack_limit), whose frames are read in
	 * windows that stop at nothing but its start; 0, 0 when unknown. */
	__u64 chunk_lo;
	__u64 chunk_hi;
	__u32 searched;	  /* thread states looked at; 1 once found from the cache */
	__u8 state;	  /* enum py_walk_state */
	__u8 native_next; /* the eval call is done: its native step follows at once */
	__u8 pad[2];
};

/* Where a Python step writes frames: the sample's frame slots from at on,
 * at most room of them; k written so far; full once one did not fit. */
struct py_out {
	__u32 at;
	__u32 room;
	__u32 k;
	__u32 full;
};

#endif /* EHPROF_BPF_PYTHON_STATE_BPF_H_ */
