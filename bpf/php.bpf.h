/* PHP frames inside the native walk: when the walk reaches the VM loop
 * (execute_ex, and opcache's JIT code) of a process in php_procs, the PHP
 * frames that execute_ex call runs are emitted in front of its native
 * frame, innermost first, then the native walk goes on. The frames come
 * from executor_globals.current_execute_data (read at the sample's first
 * VM frame) along prev_execute_data; one execute_ex call's frames end
 * after the user-code frame whose call info has ZEND_CALL_TOP (the frame
 * that call began with). Internal (C) functions' frames carry no such
 * frame of their own in the VM: each is emitted with the VM call below
 * it, so array_map's frame follows the native frames of zif_array_map and
 * the callbacks' VM call above them. dwarf_step_state (bpf/walk.bpf.h)
 * calls php_step, a global function verified once, when the step's pc is
 * in the VM (scratch's php_vm, compared before any call) or while
 * php_busy says a VM call has frames left (at most PHP_STEP_FRAMES a
 * step). Each frame word: EHP_INTERP_FRAME(EHP_INTERP_PHP, its
 * zend_function, its opline's aux, bpf/ehprof_abi.h); a stop
 * marker (function 0, aux enum ehp_php_stop) where the walk could not go
 * on. The step's frames and result are bpf/interp_walk.bpf.h's, as Python's
 * and Ruby's. Included after bpf/python.bpf.h, before bpf/stacks.bpf.h. */
#ifndef EHPROF_BPF_PHP_BPF_H_
#define EHPROF_BPF_PHP_BPF_H_

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EHP_PHP_PROCS);
	__type(key, __u32);
	__type(value, struct ehp_php_proc);
} php_procs SEC(".maps");

enum php_walk_state {
	PHP_OFF = 0,	/* not a PHP process, or the PHP walk stopped */
	PHP_IDLE = 1,	/* native frames; look for the VM */
	PHP_FRAMES = 2, /* emitting one execute_ex call's frames */
};

/* PHP frames per php_step: a deeper VM call takes more steps. Each step
 * costs a bpf_loop iteration and php_step's own setup, so a step takes as
 * many as the verifier's pass over the frame loop allows cheaply. */
#define PHP_STEP_FRAMES 16
/* Bytes of a zend_execute_data the walk takes: every field it reads lies
 * in its first 64 (user space checks the offsets against it). */
#define PHP_EX_READ 64
/* Frames are read through a window: one read from below a frame up to
 * the frame's end. A VM call's frames sit on the VM stack each caller
 * below its callee, so the callers in the window cost no read of their
 * own: the window reaches down to the start of the VM stack segment the
 * frame is in (all of it written by the frames pushed there) or PHP_WIN
 * below the frame's end, else (a frame outside the segment: a generator's)
 * to the frame's page start. bench/php_cost.py's 52 frames, some 200
 * bytes each, are one read. */
#define PHP_WIN 16384

/* Per CPU: the sample's PHP process and the PHP walk's state, in a map
 * value the verifier does not track (no states multiplied). */
struct php_buf {
	struct ehp_php_proc proc;
	__u64 cursor;	/* the next zend_execute_data */
	__u64 vm_value; /* the VM's native frame word, pushed after its PHP frames */
	__u64 leaf_opline; /* the leaf frame's opline from the VM's register, else 0 */
	__u64 leaf_ex;	   /* the frame it is the opline of */
	struct py_out out; /* the step's frames (bpf/interp_walk.bpf.h) */
	__u32 total;	/* PHP frames of this sample */
	__u8 state;	/* enum php_walk_state */
	__u8 started;	/* cursor read from executor_globals */
	__u8 native_next; /* the VM call is done: its native step follows */
	__u8 pad;
	__u64 slot;	/* a frame's slot, through memory (php_frames) */
	__u64 seg_lo;	 /* the current VM stack segment: [seg_lo, seg_hi) */
	__u64 seg_hi;	 /* (EG(vm_stack), EG(vm_stack_top)), 0, 0 if not known */
	__u64 win_lo;	 /* the address of win[0] */
	__u32 win_len;	 /* bytes win holds */
	__u32 pad2;
	__u8 win[PHP_WIN + PHP_EX_READ];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct php_buf);
} php_buf SEC(".maps");

/* One frame word into the sample (0 when it does not fit: out.full). */
EHP_INLINE int php_push(struct php_buf *buf, struct scratch *s, __u64 value)
{
	return interp_push(&buf->out, s, value);
}

/* The VM call's frames are done (or given up): its native frame follows
 * them, then the native walk resumes from it. */
EHP_INLINE void php_end_vm(struct php_buf *buf, struct scratch *s, __u8 next_state)
{
	buf->state = next_state;
	buf->native_next = 1;
	php_push(buf, s, buf->vm_value);
}

/* The PHP walk cannot go on: a marker saying why, the VM's native frame,
 * native frames only from here. */
EHP_INLINE void php_stop(struct php_buf *buf, struct scratch *s, __u32 why)
{
	if (php_push(buf, s, EHP_INTERP_FRAME(EHP_INTERP_PHP, 0ull, why)))
		php_end_vm(buf, s, PHP_OFF);
}

#include "bpf/php_frames.bpf.h"

/* Starts the PHP side of a walk of process pid: its VM ranges into
 * scratch (zeros when pid is no PHP process). */
EHP_INLINE void php_begin(struct scratch *s, __u32 pid)
{
	__u32 zero = 0;
	struct php_buf *buf = bpf_map_lookup_elem(&php_buf, &zero);
	struct ehp_php_proc *proc = buf ? bpf_map_lookup_elem(&php_procs, &pid) : 0;
	s->php_busy = 0;
	__builtin_memset(s->php_vm, 0, sizeof(s->php_vm));
	if (buf)
		buf->state = PHP_OFF;
	if (!buf || !proc || !php_layout_ok(proc))
		return;
	buf->proc = *proc;
	buf->state = PHP_IDLE;
	buf->started = 0;
	buf->cursor = 0;
	buf->total = 0;
	buf->leaf_opline = 0;
	buf->leaf_ex = 0; /* no frame is at 0 */
	buf->win_len = 0; /* another sample's memory */
	buf->seg_lo = 0;
	buf->seg_hi = 0;
	for (int i = 0; i < EHP_PHP_VM_RANGES; i++) {
		s->php_vm[2 * i] = proc->vm_begin[i];
		s->php_vm[2 * i + 1] = proc->vm_end[i];
	}
}

/* At a pc in the VM: its native frame comes off the sample until its PHP
 * frames are out; the sample's first VM frame reads the current frame. */
EHP_INLINE int php_at_vm(struct php_buf *buf, struct scratch *s)
{
	__u64 at = buf->out.at - 1;
	if (at >= EHP_MAX_EVENT_FRAMES)
		return 0;
	EHP_CLAMP_UMAX(at, EHP_MAX_EVENT_FRAMES - 1);
	buf->vm_value = s->frames[at];
	buf->out.at = (__u32)at;
	buf->out.room++;
	buf->state = PHP_FRAMES;
	if (!buf->started) {
		buf->started = 1;
		if (php_read_current(buf)) {
			php_stop(buf, s, EHP_PHP_STOP_READ_FAULT);
			return 1;
		}
		/* The leaf itself in the VM: its registers are the interrupted
		 * ones, and the opline register is the frame's when the
		 * execute_data register is that frame. */
		__u32 re = buf->proc.reg_ex & 15, ro = buf->proc.reg_opline & 15;
		if (s->exact && re && ro && (s->valid & REG_BIT(re)) && (s->valid & REG_BIT(ro)) &&
		    s->regs[re] == buf->cursor && s->regs[ro]) {
			buf->leaf_ex = buf->cursor;
			buf->leaf_opline = s->regs[ro];
		}
	}
	return 1;
}

/* php_step's result is interp_step_result's, which walk.bpf.h's hook
 * reads with its own names for the same acts. */
_Static_assert((int)PHP_ACT_NEXT == (int)PY_ACT_NEXT && (int)PHP_ACT_FULL == (int)PY_ACT_FULL &&
		       (int)PHP_ACT_NATIVE == (int)PY_ACT_NATIVE && PHP_STEP_NATIVE == PY_STEP_NATIVE,
	       "php_step's acts are interp_walk's");

/* The PHP side of a walk step whose next frame slot is at, n frames into
 * the walk, at a pc in the VM (bpf/walk.bpf.h declares it and its
 * results). Keeps scratch's php_busy. */
__noinline int php_step(__u32 at, __u32 n)
{
	__u32 zero = 0;
	struct php_buf *buf = bpf_map_lookup_elem(&php_buf, &zero);
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!buf || !s)
		return PHP_STEP_NATIVE;
	if (buf->state == PHP_OFF || (buf->state == PHP_IDLE && n == 0)) {
		s->php_busy = 0;
		return PHP_STEP_NATIVE;
	}
	interp_out_begin(&buf->out, at, n);
	if (buf->state == PHP_IDLE && !php_at_vm(buf, s))
		return PHP_STEP_NATIVE;
	if (buf->state == PHP_FRAMES && !buf->out.full)
		php_frames(buf, s);
	int r = interp_step_result(&buf->out, at, buf->native_next);
	__u8 done = buf->native_next && !buf->out.full;
	buf->native_next = 0;
	/* Leaving JIT code: the native step is execute_ex's (jit_resume). */
	__u64 pc = s->exact ? s->pc : s->pc - 1;
	if (done && buf->proc.jit_resume && pc >= buf->proc.vm_begin[1] && pc < buf->proc.vm_end[1]) {
		s->pc = buf->proc.jit_resume;
		s->exact = 1;
	}
	s->php_busy = buf->state == PHP_FRAMES;
	if (buf->state == PHP_OFF)
		__builtin_memset(s->php_vm, 0, sizeof(s->php_vm));
	return r;
}

#endif /* EHPROF_BPF_PHP_BPF_H_ */
