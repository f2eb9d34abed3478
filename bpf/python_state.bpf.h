/* The Python walk's state inside a user walk (struct walk's `py`), kept
 * apart from bpf/python.bpf.h so bpf/walk.bpf.h can hold it. */
#ifndef EHPROF_BPF_PYTHON_STATE_BPF_H_
#define EHPROF_BPF_PYTHON_STATE_BPF_H_

enum py_walk_state {
	PY_OFF = 0,    /* not a Python process, or the Python walk stopped */
	PY_IDLE = 1,   /* native frames; look for the eval loop */
	PY_SEARCH = 2, /* looking for this thread's thread state */
	PY_FRAMES = 3, /* emitting one eval call's Python frames */
};

struct py_walk {
	struct ehp_py_proc *proc;
	__u8 *buf;	  /* per-CPU frame read buffer */
	__u64 frame;	  /* the next interpreter frame */
	__u64 interp;	  /* PY_SEARCH: the interpreter being searched */
	__u64 tstate;	  /* PY_SEARCH: the thread state to look at next */
	__u64 eval_value; /* the eval loop's native frame, pushed after its Python frames */
	__u64 fsbase;	  /* this thread's pthread_self() */
	__u32 searched;
	__u8 state;	  /* enum py_walk_state */
	__u8 native_next; /* the next step is the eval loop's own native step */
	__u8 pad[2];
};

#endif /* EHPROF_BPF_PYTHON_STATE_BPF_H_ */
