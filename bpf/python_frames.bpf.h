/* The frames of one CPython eval call, read in a global function (verified
 * once, on its own: the per-frame branches multiply none of the walk's
 * states, and a frame costs no bpf_loop step). Frames are read through a
 * window: one bpf_probe_read_user of the frame's page up to the frame's
 * end, from which the frames it holds are taken without another read. On
 * 3.11+ an eval call's frames sit in the thread's data stack, each caller
 * below its callee (about 20 frames a read on 3.12 in
 * bench/python_cost.py's 50-deep recursion); on 3.10 frame objects come
 * from the allocator's 4 KiB pools, mostly handed out upwards as calls
 * nest (about 4 a read). Included by bpf/python.bpf.h. */
#ifndef EHPROF_BPF_PYTHON_FRAMES_BPF_H_
#define EHPROF_BPF_PYTHON_FRAMES_BPF_H_

#define PY_WIN 4096
/* A cached thread state's thread_id and frame field are read at once when
 * no farther apart than this. */
#define PY_TSTATE_SPAN 512
/* Frames per call of py_eval_frames: more are left to its next call. */
#define PY_EVAL_FRAMES_MAX 16

/* Per CPU: the sample's Python process (copied at its start), the window
 * and what py_eval_frames leaves for its caller. In a map value the
 * verifier does not track these, so they multiply no states. */
struct py_win_buf {
	struct ehp_py_proc proc;
	__u64 lo;   /* the address of b[0] */
	__u64 next; /* py_eval_frames: the frame after the last one it took */
	__u32 len;  /* bytes b holds */
	__u32 pad;
	__u8 b[PY_WIN];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct py_win_buf);
} py_buf SEC(".maps");

enum py_view_mode {
	PY_VIEW_EXACT = 0, /* only the bytes asked for */
	PY_VIEW_BELOW = 1, /* from the page start up to the bytes asked for */
};

/* py_eval_frames' result: (status << 16) | frames written. */
enum py_eval_status {
	/* 1-4: an enum ehp_py_stop, the walk stops */
	PY_EVAL_DONE = 0, /* the eval call's frames are all out */
	PY_EVAL_MORE = 8, /* PY_EVAL_FRAMES_MAX taken: call again */
	PY_EVAL_FULL = 9, /* no room for the next frame */
};

/* Where the len bytes at addr (len <= PY_TSTATE_SPAN) are in buf's window,
 * -1 when they cannot be read. When the window held does not cover them,
 * reads a new one: only them (PY_VIEW_EXACT), or their page up to their
 * end (PY_VIEW_BELOW); only them again if that read fails. */
EHP_INLINE int py_view(struct py_win_buf *buf, __u64 addr, __u32 len, __u32 mode)
{
	__u64 off = addr - buf->lo;
	if (len > PY_TSTATE_SPAN)
		return -1;
	if (addr >= buf->lo && off <= PY_WIN && off + len <= buf->len)
		return (int)off;
	__u64 lo = mode == PY_VIEW_BELOW ? addr & ~(__u64)(PAGE_SIZE_BYTES - 1) : addr;
	__u64 size = addr + len - lo;
	if (size > PY_WIN || bpf_probe_read_user(buf->b, size, (void *)lo)) {
		lo = addr;
		size = len;
		if (bpf_probe_read_user(buf->b, size, (void *)lo)) {
			buf->len = 0;
			return -1;
		}
	}
	buf->lo = lo;
	buf->len = (__u32)size;
	return (int)(addr - lo);
}

/* A u64 at off in the window. */
EHP_INLINE __u64 py_win_u64(struct py_win_buf *buf, __u32 off)
{
	__u64 v = 0;
	if (off <= PY_WIN - 8)
		__builtin_memcpy(&v, buf->b + off, 8);
	return v;
}

/* Whether tstate is the thread state of the thread whose fs base is
 * fsbase (thread_id and the frame field in one read): 1, its current
 * frame then left in py_buf's next; 0 if not; -1 when its frame's cframe
 * cannot be read. */
__noinline int py_thread_frame(__u64 tstate, __u64 fsbase)
{
	__u32 zero = 0;
	struct py_win_buf *buf = bpf_map_lookup_elem(&py_buf, &zero);
	if (!buf || !tstate)
		return 0;
	struct ehp_py_proc *p = &buf->proc;
	__u32 id_off = p->tstate_thread_id, frame_off = p->tstate_frame;
	__u32 lo = id_off < frame_off ? id_off : frame_off;
	__u32 hi = (id_off < frame_off ? frame_off : id_off) + 8;
	if (hi - lo > PY_TSTATE_SPAN)
		return 0;
	int at = py_view(buf, tstate + lo, hi - lo, PY_VIEW_EXACT);
	if (at < 0 || py_win_u64(buf, (__u32)at + id_off - lo) != fsbase)
		return 0;
	__u64 frame = py_win_u64(buf, (__u32)at + frame_off - lo);
	if (p->cframe_frame != EHP_PY_NO_CFRAME && frame &&
	    bpf_probe_read_user(&frame, sizeof(frame), (void *)(frame + p->cframe_frame)))
		return -1;
	buf->next = frame;
	return 1;
}

/* Writes the Python frames of the eval call whose innermost frame is
 * frame into the scratch sample's frames from slot at on, at most room of
 * them and PY_EVAL_FRAMES_MAX: see enum py_eval_status; the frame to go on
 * from is left in py_buf's next. -1: no buffers. */
__noinline int py_eval_frames(__u64 frame, __u32 at, __u32 room)
{
	__u32 zero = 0, n = 0, status = PY_EVAL_MORE;
	struct py_win_buf *buf = bpf_map_lookup_elem(&py_buf, &zero);
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!buf || !s || at >= EHP_MAX_EVENT_FRAMES)
		return -1;
	struct ehp_py_proc *p = &buf->proc;
	__u32 len = p->frame_read;
	if (len > EHP_PY_FRAME_READ_MAX)
		len = EHP_PY_FRAME_READ_MAX;
	/* Read once: a read into buf->b could alias them for the compiler. */
	const __u32 f_code = p->frame_code, f_previous = p->frame_previous;
	const __u32 f_instr = p->frame_instr, f_entry = p->frame_entry;
	const __u8 layout = p->layout, owner_cstack = p->owner_cstack;
#pragma clang loop unroll(disable)
	for (int k = 0; k < PY_EVAL_FRAMES_MAX; k++) {
		if (!frame) {
			status = EHP_PY_STOP_FRAMES_END;
			break;
		}
		int off = py_view(buf, frame, len, PY_VIEW_BELOW);
		if (off < 0) {
			status = EHP_PY_STOP_READ_FAULT;
			break;
		}
		__u32 base = (__u32)off;
		__u64 code = py_win_u64(buf, base + f_code);
		__u64 previous = py_win_u64(buf, base + f_previous);
		__u64 instr = py_win_u64(buf, base + f_instr);
		__u32 entry_at = base + f_entry;
		__u8 entry = entry_at < PY_WIN ? buf->b[entry_at] : 0;
		if (layout == EHP_PY_CSTACK_OWNER && entry == owner_cstack) {
			frame = previous; /* the eval call's entry shim */
			status = PY_EVAL_DONE;
			break;
		}
		if (!code || (code & 7)) {
			status = EHP_PY_STOP_BAD_FRAME;
			break;
		}
		if (n >= room || at + n >= EHP_MAX_EVENT_FRAMES) {
			status = PY_EVAL_FULL;
			break;
		}
		__u64 pos;
		if (layout == EHP_PY_FRAME_OBJECTS) {
			__s32 lasti = (__s32)instr;
			pos = lasti < 0 ? EHP_PY_OFFSET_UNKNOWN : (__u64)lasti;
		} else {
			pos = instr - code;
		}
		if (pos > EHP_PY_OFFSET_UNKNOWN)
			pos = EHP_PY_OFFSET_UNKNOWN;
		s->frames[at + n] = EHP_PY_FRAME(code, pos);
		n++;
		frame = previous;
		if (layout == EHP_PY_FRAME_OBJECTS || (layout == EHP_PY_IS_ENTRY && entry)) {
			status = PY_EVAL_DONE;
			break;
		}
	}
	buf->next = frame;
	return (int)((status << 16) | n);
}

#endif /* EHPROF_BPF_PYTHON_FRAMES_BPF_H_ */
