/* The frames of one CPython eval call, read inside py_step (a global
 * function, bpf/python.bpf.h, verified once on its own: the per-frame
 * branches multiply none of the walk's states, and up to
 * PY_EVAL_FRAMES_MAX frames cost one bpf_loop step). Frames are read through a
 * window: one bpf_probe_read_user of the frame's page up to the frame's
 * end, from which the frames it holds are taken without another read. On
 * 3.11+ an eval call's frames sit in the thread's data stack, each caller
 * below its callee, and the window reaches down to the chunk's start
 * (bench/python_cost.py's 50 frames in one read); on 3.10 frame objects
 * come from the allocator's 4 KiB pools, mostly handed out upwards as
 * calls nest (about 4 a read). What lives on the C stack (3.11/3.12's
 * cframe, a 3.12+ entry frame) is read through the native walk's stack
 * window instead. Included by bpf/python.bpf.h. */
#ifndef EHPROF_BPF_PYTHON_FRAMES_BPF_H_
#define EHPROF_BPF_PYTHON_FRAMES_BPF_H_

#include "bpf/python_state.bpf.h"

/* The window: 8 KiB takes about 70 frames of bench/python_cost.py's
 * recursion in one read on 3.12. */
#define PY_WIN 8192
/* A cached thread state's thread_id and frame field are read at once when
 * no farther apart than this. */
#define PY_TSTATE_SPAN 512
/* Frames per py_step: more are left to the next step. */
#define PY_EVAL_FRAMES_MAX 16

/* Per CPU: the sample's Python process (copied at its start), the Python
 * walk's state and the window. In a map value the verifier does not track
 * these, so they multiply no states. */
struct py_win_buf {
	struct ehp_py_proc proc;
	struct py_walk walk;
	struct py_out out; /* py_step's frames */
	__u64 lo;  /* the address of b[0] */
	__u32 len; /* bytes b holds */
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

/* Where the len bytes at addr (len <= PY_TSTATE_SPAN) are in buf's window,
 * -1 when they cannot be read. When the window held does not cover them,
 * reads a new one: only them (PY_VIEW_EXACT), or as much below them as one
 * window takes (PY_VIEW_BELOW): down to the start of the thread's data
 * stack chunk when they are in it (3.11+: every frame of the thread but a
 * generator's, callers below callees), else down to their page's start;
 * only them again if that read fails. */
EHP_INLINE int py_view(struct py_win_buf *buf, __u64 addr, __u32 len, __u32 mode)
{
	__u64 off = addr - buf->lo;
	if (len > PY_TSTATE_SPAN)
		return -1;
	if (addr >= buf->lo && off <= PY_WIN && off + len <= buf->len)
		return (int)off;
	__u64 end = addr + len, lo = addr;
	if (mode == PY_VIEW_BELOW) {
		if (addr >= buf->walk.chunk_lo && end <= buf->walk.chunk_hi)
			lo = end - buf->walk.chunk_lo > PY_WIN ? end - PY_WIN : buf->walk.chunk_lo;
		else
			lo = addr & ~(__u64)(PAGE_SIZE_BYTES - 1);
	}
	__u64 size = end - lo;
	if (size > PY_WIN) {
		lo = addr;
		size = len;
	}
	/* Bounded in the register the read takes (EHP_CLAMP_UMAX: 6.1 lost
	 * the compare's bound on a spilled copy and saw a 65535-byte read). */
	EHP_CLAMP_UMAX(size, PY_WIN);
	if (bpf_probe_read_user(buf->b, size, (void *)lo)) {
		if (lo == addr)
			goto fail;
		lo = addr;
		size = len;
		EHP_CLAMP_UMAX(size, PY_TSTATE_SPAN);
		if (bpf_probe_read_user(buf->b, size, (void *)lo))
			goto fail;
	}
	buf->lo = lo;
	buf->len = (__u32)size;
	return (int)(addr - lo);
fail:
	buf->len = 0;
	return -1;
}

/* The u64 at off in the window, 0 past its end. Every u64 the walk takes
 * sits 8-aligned in the window (frames and thread states are 8-aligned,
 * the window starts at one or at a page, user space's offsets are
 * 8-aligned): one load, where a memcpy from an offset of unknown alignment
 * was compiled into eight byte loads and fourteen shifts and ors. */
EHP_INLINE __u64 py_win_u64(struct py_win_buf *buf, __u32 off)
{
	if (off > PY_WIN - 8)
		return 0;
	return *(__u64 *)(buf->b + (off & ~7u));
}

/* How far above the eval loop's stack pointer a frame may be and still be
 * taken for a C stack one (a 3.12+ entry frame sits in the eval loop's own
 * C frame, a few hundred bytes up). */
#define PY_CSTACK_REACH 65536

/* Where the len bytes at addr (len <= EHP_PY_FRAME_READ_MAX) are in the
 * native walk's stack window (struct scratch's win), -1 when not there and
 * not readable into it. Bytes of the C stack (3.11/3.12's cframe, a 3.12+
 * entry frame) are read through that window as the native walk reads its
 * words, from addr up to its page's end: the walk's next steps, in the
 * eval loop's frame and its callers', mostly find their words in the same
 * read, where a read of the Python window would have cost one of its own
 * and dropped the data stack's frames. */
EHP_INLINE int py_stack_at(struct scratch *s, __u64 addr, __u32 len)
{
	__u64 off = addr - s->win_lo;
	if (len > EHP_PY_FRAME_READ_MAX)
		return -1;
	if (addr >= s->win_lo && off <= STACK_WINDOW - EHP_PY_FRAME_READ_MAX && off + len <= s->win_len)
		return (int)off;
	__u64 size = PAGE_SIZE_BYTES - (addr & (PAGE_SIZE_BYTES - 1));
	EHP_CLAMP_UMAX(size, STACK_WINDOW);
	if (size < len || bpf_probe_read_user(s->win, size, (void *)addr))
		return -1;
	s->win_lo = addr;
	s->win_len = (__u32)size;
	return 0;
}

/* The u64 at off in the stack window, 0 past its end. The window starts
 * wherever the walk last read (not always 8-aligned), so this is a copy,
 * not py_win_u64's aligned load; one per eval call. */
EHP_INLINE __u64 py_stack_u64(struct scratch *s, __u32 off)
{
	__u64 v = 0;
	if (off <= STACK_WINDOW - 8)
		__builtin_memcpy(&v, s->win + off, sizeof(v));
	return v;
}

/* One frame value into the sample (0 when it does not fit: out.full). */
EHP_INLINE int py_push(struct py_win_buf *buf, struct scratch *s, __u64 value)
{
	return interp_push(&buf->out, s, value);
}

/* The eval call's Python frames are done (or given up): its native frame
 * follows them, then the native walk resumes from it. */
EHP_INLINE int py_end_eval(struct py_win_buf *buf, struct scratch *s, __u8 next_state)
{
	buf->walk.state = next_state;
	buf->walk.native_next = 1;
	return py_push(buf, s, buf->walk.eval_value);
}

/* The Python walk cannot go on: a marker frame saying why, the eval loop's
 * native frame, and native frames only from here. */
EHP_INLINE int py_stop(struct py_win_buf *buf, struct scratch *s, __u32 why)
{
	if (!py_push(buf, s, EHP_PY_FRAME(0ull, why)))
		return 0;
	return py_end_eval(buf, s, PY_OFF);
}

/* Whether tstate is the thread state of the thread whose fs base is
 * fsbase (thread_id, the frame field and on 3.11+ the data stack's
 * chunk and limit in one read): 1, its current frame then in *frame and
 * the chunk in buf's walk; 0 if not; -1 when its frame's cframe cannot be
 * read. */
EHP_INLINE int py_thread_frame(struct py_win_buf *buf, struct scratch *s, __u64 tstate, __u64 fsbase,
				__u64 *frame)
{
	struct ehp_py_proc *p = &buf->proc;
	if (!tstate)
		return 0;
	__u32 id_off = p->tstate_thread_id, frame_off = p->tstate_frame, ds_off = p->tstate_datastack;
	__u32 lo = id_off < frame_off ? id_off : frame_off;
	__u32 hi = (id_off < frame_off ? frame_off : id_off) + 8;
	if (hi - lo > PY_TSTATE_SPAN)
		return 0;
	/* datastack_chunk, _top, _limit: in the same read when near enough. */
	int ds = ds_off != EHP_PY_NO_DATASTACK;
	__u32 ds_lo = ds && ds_off < lo ? ds_off : lo;
	__u32 ds_hi = ds && ds_off + 24 > hi ? ds_off + 24 : hi;
	if (ds && ds_hi - ds_lo <= PY_TSTATE_SPAN) {
		lo = ds_lo;
		hi = ds_hi;
	} else {
		ds = 0;
	}
	int at = py_view(buf, tstate + lo, hi - lo, PY_VIEW_EXACT);
	if (at < 0 || py_win_u64(buf, (__u32)at + id_off - lo) != fsbase)
		return 0;
	*frame = py_win_u64(buf, (__u32)at + frame_off - lo);
	if (ds) {
		buf->walk.chunk_lo = py_win_u64(buf, (__u32)at + ds_off - lo);
		buf->walk.chunk_hi = py_win_u64(buf, (__u32)at + ds_off + 16 - lo);
	}
	/* 3.11/3.12: cframe is a local of the innermost eval call, on the C stack. */
	if (p->cframe_frame != EHP_PY_NO_CFRAME && *frame && !read_stack_u64(s, *frame + p->cframe_frame, frame))
		return -1;
	return 1;
}

/* The current eval call's next frames (up to PY_EVAL_FRAMES_MAX), from
 * the walk's frame on; at the eval call's entry frame its native frame.
 * The cursor and the output slot stay in registers through the loop and
 * go back to buf at its end (a store to the sample's frames could alias
 * buf for the compiler, which then reloaded them after every frame). The
 * offsets are read from buf at each use: a value the verifier knows (a
 * layout compared) would split its states. */
EHP_INLINE void py_frames(struct py_win_buf *buf, struct scratch *s)
{
	struct ehp_py_proc *p = &buf->proc;
	__u64 frame = buf->walk.frame;
	__u32 k = buf->out.k;
	__u32 why = 0;
	__u8 end = 0;
#pragma clang loop unroll(disable)
	for (int i = 0; i < PY_EVAL_FRAMES_MAX; i++) {
		__u32 len = p->frame_read;
		if (!frame || (frame & 7)) {
			why = frame ? EHP_PY_STOP_BAD_FRAME : EHP_PY_STOP_FRAMES_END;
			break;
		}
		if (len > EHP_PY_FRAME_READ_MAX)
			len = EHP_PY_FRAME_READ_MAX;
		/* 3.12+: a frame outside the data stack chunk and just above the
		 * eval loop's stack pointer is its entry frame, on the C stack. */
		if (p->layout == EHP_PY_CSTACK_OWNER && (frame < buf->walk.chunk_lo || frame >= buf->walk.chunk_hi) &&
		    (s->valid & REG_BIT(EHP_REG_RSP)) && frame - s->regs[EHP_REG_RSP] < PY_CSTACK_REACH) {
			int so = py_stack_at(s, frame, len);
			__u32 owner_at = (__u32)so + p->frame_entry;
			if (so >= 0 && owner_at < STACK_WINDOW && s->win[owner_at] == p->owner_cstack) {
				frame = py_stack_u64(s, (__u32)so + p->frame_previous);
				end = 1;
				break;
			}
		}
		int off = py_view(buf, frame, len, PY_VIEW_BELOW);
		if (off < 0) {
			why = EHP_PY_STOP_READ_FAULT;
			break;
		}
		__u32 base = (__u32)off;
		__u64 code = py_win_u64(buf, base + p->frame_code) & ~(__u64)p->code_tags;
		__u32 entry_at = base + p->frame_entry;
		__u8 entry = entry_at < PY_WIN ? buf->b[entry_at] : 0;
		__u8 layout = p->layout;
		frame = py_win_u64(buf, base + p->frame_previous);
		if (layout == EHP_PY_CSTACK_OWNER && entry == p->owner_cstack) {
			end = 1; /* the eval call's entry shim */
			break;
		}
		if (!code || (code & 7)) {
			why = EHP_PY_STOP_BAD_FRAME;
			break;
		}
		__u64 instr = py_win_u64(buf, base + p->frame_instr);
		__u64 pos;
		if (layout == EHP_PY_FRAME_OBJECTS) {
			__s32 lasti = (__s32)instr;
			pos = lasti < 0 ? EHP_PY_OFFSET_UNKNOWN : (__u64)lasti;
		} else {
			pos = instr - code;
		}
		if (pos > EHP_PY_OFFSET_UNKNOWN)
			pos = EHP_PY_OFFSET_UNKNOWN;
		__u64 at = buf->out.at + k;
		if (k >= buf->out.room || at >= EHP_MAX_EVENT_FRAMES) {
			buf->out.full = 1;
			break;
		}
		EHP_CLAMP_UMAX(at, EHP_MAX_EVENT_FRAMES - 1); /* in the register indexing */
		s->frames[at] = EHP_PY_FRAME(code, pos);
		k++;
		if (layout == EHP_PY_FRAME_OBJECTS || (layout == EHP_PY_IS_ENTRY && entry)) {
			end = 1;
			break;
		}
	}
	buf->walk.frame = frame;
	buf->out.k = k;
	if (why)
		py_stop(buf, s, why);
	else if (end)
		py_end_eval(buf, s, PY_IDLE);
}

#endif /* EHPROF_BPF_PYTHON_FRAMES_BPF_H_ */
