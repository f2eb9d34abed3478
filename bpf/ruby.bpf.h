/* Ruby frames inside the native walk: when the walk reaches vm_exec_core
 * (the VM loop one rb_vm_exec call runs) in a process of ruby_procs, the
 * control frames that VM call runs are pushed leaf-side of its native
 * frame, from the thread's current one (rb_execution_context_t's cfp, the
 * first time) up to and including the one flagged VM_FRAME_FLAG_FINISH
 * (the frame rb_vm_exec was entered for), then the native walk goes on;
 * the next vm_exec_core goes on from the control frame after it. So Ruby
 * frames interleave with the native frames of C methods and of the C code
 * that yields to blocks, in the order Ruby runs them. The thread's
 * execution context is libruby's TLS variable ruby_current_ec, read
 * through the thread's own fsbase (through the DTV until the walk has
 * learned the process's static TLS distance): exact for every thread, the
 * ones waiting for the GVL included (a ractor's running_ec is only the GVL
 * holder's). rb_step is a global function verified once on its own; up to
 * RB_FRAMES_MAX control frames a bpf_loop step. The offsets come per
 * libruby from user space (agent/ruby/). Included after bpf/python.bpf.h. */
#ifndef EHPROF_BPF_RUBY_BPF_H_
#define EHPROF_BPF_RUBY_BPF_H_

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EHP_RUBY_PROCS);
	__type(key, __u32);
	__type(value, struct ehp_ruby_proc);
} ruby_procs SEC(".maps");

#include "bpf/ruby_frames.bpf.h"

/* Starts the Ruby side of a walk of process pid (scratch's rb_vm: its VM
 * loop, zeros when the walk is off); nonzero when it is on. */
EHP_INLINE __u8 ruby_begin(struct scratch *s, __u32 pid)
{
	__u32 zero = 0;
	struct rb_buf *buf = bpf_map_lookup_elem(&rb_buf, &zero);
	s->rb_busy = 0;
	s->rb_vm[0] = 0;
	s->rb_vm[1] = 0;
	s->rb_jit = RB_JIT_NONE;
	if (!buf)
		return 0;
	buf->state = RB_OFF;
#ifdef __TARGET_ARCH_x86
	struct ehp_ruby_proc *proc = bpf_map_lookup_elem(&ruby_procs, &pid);
	if (proc) {
		buf->proc = *proc;
		buf->fsbase = bpf_get_current_task_btf()->thread.fsbase;
		buf->found = 0;
		buf->looked = 0;
		buf->win_len = 0;
		buf->val_len = 0;
		buf->pid = pid;
		buf->state = RB_IDLE;
		s->rb_vm[0] = proc->vm_begin;
		s->rb_vm[1] = proc->vm_end;
		s->rb_jit = RB_JIT_IDLE;
	}
#endif
	return buf->state;
}

/* rb_step's result when rb_scan_step is to go on with the step: an act
 * no step result has. */
#define RB_STEP_SCAN (0xff << 16)

/* The Ruby side of a walk step whose next frame slot is at, n frames
 * into the walk, at lookup address pc: as py_step, PY_STEP_NATIVE or
 * (PY_ACT_* << 16) | (1 + frames added). */
__noinline int rb_step(__u32 at, __u32 n, __u64 pc, __u32 jit)
{
	__u32 zero = 0;
	struct rb_buf *buf = bpf_map_lookup_elem(&rb_buf, &zero);
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!buf || !s)
		return PY_STEP_NATIVE;
	if (buf->state == RB_OFF ||
	    (buf->state == RB_IDLE && (n == 0 || (!jit && !interp_in(pc, buf->proc.vm_begin, buf->proc.vm_end))))) {
		s->rb_busy = 0;
		return PY_STEP_NATIVE;
	}
	interp_out_begin(&buf->out, at, n);
	if (buf->state == RB_IDLE) {
		/* vm_exec_core's frame comes off until its control frames are in. */
		__u64 prev = at - 1;
		if (prev >= EHP_MAX_EVENT_FRAMES)
			return PY_STEP_NATIVE;
		EHP_CLAMP_UMAX(prev, EHP_MAX_EVENT_FRAMES - 1);
		buf->vm_value = s->frames[prev];
		buf->out.at = (__u32)prev;
		buf->out.room++;
		buf->state = RB_FRAMES;
		rb_jit_begin(buf, jit);
		if (!buf->found) {
			buf->vm_leaf = n == 1;
			if (!rb_find_cfp(buf))
				rb_stop(buf, s, EHP_RUBY_STOP_NO_EC);
		}
	}
	if (buf->state == RB_FRAMES && !buf->out.full)
		rb_frames(buf, s);
	int r = interp_step_result(&buf->out, at, buf->native_next);
	buf->native_next = 0;
	s->rb_busy = buf->state == RB_FRAMES;
	if (buf->state == RB_OFF)
		s->rb_vm[0] = s->rb_vm[1] = 0;
	if (buf->scan) {
		buf->scan = 0;
		return RB_STEP_SCAN;
	}
	return r;
}

/* The rest of a step whose rb_step returned RB_STEP_SCAN (at: that step's):
 * its plain method frames (rb_scan), and the step's result. */
__noinline int rb_scan_step(__u32 at)
{
	__u32 zero = 0;
	struct rb_buf *buf = bpf_map_lookup_elem(&rb_buf, &zero);
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!buf || !s)
		return PY_STEP_NATIVE; /* never: both are arrays' slot 0 */
	rb_scan(buf, s);
	return interp_step_result(&buf->out, at, 0);
}

/* A step of the user walk that knows Ruby, then Python's (py_dwarf_step:
 * the native step, or Python's own). */
static long rb_dwarf_step(__u32 i, void *data)
{
	struct walk *w = data;
	struct scratch *s = w->s;
	/* rb_vm is [0, 0) while the Ruby walk is off. */
	if (s->rb_vm[1]) {
		__u64 pc = s->exact ? s->pc : s->pc - 1;
		/* A JIT pc (bpf/ruby_yjit.bpf.h): its frames, then its native step. */
		__u32 jit = s->rb_jit == RB_JIT_FRAMES;
		if (jit)
			s->rb_jit = RB_JIT_UNWIND;
		if (s->rb_busy || jit || (w->n && interp_in(pc, s->rb_vm[0], s->rb_vm[1]))) {
			int step = rb_step(w->base + w->n, w->n, pc, jit);
			if (step == RB_STEP_SCAN)
				step = rb_scan_step(w->base + w->n);
			long r = interp_apply(w, step);
			if (r >= 0)
				return r;
		}
	}
	return py_dwarf_step(i, data);
}

#endif /* EHPROF_BPF_RUBY_BPF_H_ */
