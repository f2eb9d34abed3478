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
 * on. Included after bpf/walk.bpf.h, before bpf/stacks.bpf.h. */
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

/* PHP frames per php_step: a deeper VM call takes more steps. */
#define PHP_STEP_FRAMES 16
/* Bytes of a zend_execute_data the walk takes: every field it reads lies
 * in its first 64 (user space checks the offsets against it). */
#define PHP_EX_READ 64
/* Frames are read through a window: one read of the frame's page from its
 * start up to the frame's end. A VM call's frames sit on the VM stack
 * each caller below its callee, so the callers in the window cost no read
 * of their own (bench/php_cost.py's 52 frames, some 200 bytes each: 3-4
 * reads). */
#define PHP_WIN 4096

/* Per CPU: the sample's PHP process and the PHP walk's state, in a map
 * value the verifier does not track (no states multiplied). */
struct php_buf {
	struct ehp_php_proc proc;
	__u64 cursor;	/* the next zend_execute_data */
	__u64 vm_value; /* the VM's native frame word, pushed after its PHP frames */
	__u64 leaf_opline; /* the leaf frame's opline from the VM's register, else 0 */
	__u64 leaf_ex;	   /* the frame it is the opline of */
	__u32 at;	/* the next frame slot */
	__u32 room;	/* slots left from at */
	__u32 k;	/* frames written this step */
	__u32 total;	/* PHP frames of this sample */
	__u8 state;	/* enum php_walk_state */
	__u8 started;	/* cursor read from executor_globals */
	__u8 full;	/* a frame did not fit */
	__u8 native_next; /* the VM call is done: its native step follows */
	__u8 pad[4];
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
	if (!buf || !proc)
		return;
	buf->proc = *proc;
	buf->state = PHP_IDLE;
	buf->started = 0;
	buf->cursor = 0;
	buf->total = 0;
	buf->leaf_opline = 0;
	buf->leaf_ex = 0; /* no frame is at 0 */
	buf->win_len = 0; /* another sample's memory */
	for (int i = 0; i < EHP_PHP_VM_RANGES; i++) {
		s->php_vm[2 * i] = proc->vm_begin[i];
		s->php_vm[2 * i + 1] = proc->vm_end[i];
	}
}

/* One frame word into the sample (0 when it does not fit: full). */
EHP_INLINE int php_push(struct php_buf *buf, struct scratch *s, __u64 value)
{
	__u32 k = buf->k;
	__u64 at = buf->at + k;
	if (k >= buf->room || at >= EHP_MAX_EVENT_FRAMES) {
		buf->full = 1;
		return 0;
	}
	EHP_CLAMP_UMAX(at, EHP_MAX_EVENT_FRAMES - 1); /* in the register indexing */
	s->frames[at] = value;
	buf->k = k + 1;
	return 1;
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

/* Where the frame at ex (8-aligned) is in the window, -1 when it cannot
 * be read. A frame the window does not hold reads a new one, from its
 * page's start (mapped when the frame is), else the frame alone. */
EHP_INLINE int php_view(struct php_buf *buf, __u64 ex)
{
	__u64 off = ex - buf->win_lo;
	if (ex >= buf->win_lo && off <= PHP_WIN && off + PHP_EX_READ <= buf->win_len)
		return (int)off;
	__u64 lo = ex & ~(__u64)(PAGE_SIZE_BYTES - 1);
	if (ex - lo > PHP_WIN)
		lo = ex - PHP_WIN;
	__u64 size = ex + PHP_EX_READ - lo;
	EHP_CLAMP_UMAX(size, PHP_WIN + PHP_EX_READ);
	if (bpf_probe_read_user(buf->win, size, (void *)lo)) {
		lo = ex;
		size = PHP_EX_READ;
		if (bpf_probe_read_user(buf->win, PHP_EX_READ, (void *)ex)) {
			buf->win_len = 0;
			return -1;
		}
	}
	buf->win_lo = lo;
	buf->win_len = (__u32)size;
	return (int)(ex - lo);
}

/* The u64 at off (masked below PHP_EX_READ, 8-aligned) of the frame at
 * base (at most PHP_WIN, 8-aligned: frames and windows are) in the window. */
#define PHP_EX_U64(buf, base, off) (*(__u64 *)((buf)->win + (base) + ((off) & (PHP_EX_READ - 8))))

/* Up to PHP_STEP_FRAMES frames of the current VM call, from the cursor.
 * The frame loop touches the window alone (a read where a frame leaves
 * it, the function's type at the call's first frame): no line is read
 * (the opline's aux is arithmetic), its state stays in locals. */
EHP_INLINE void php_frames(struct php_buf *buf, struct scratch *s)
{
	struct ehp_php_proc *p = &buf->proc;
	__u64 ex = buf->cursor;
	__u32 why = 0;
	__u8 end = 0;
	__u32 k = buf->k;
	__u32 room = buf->room;
	__u32 slot = buf->at;
	__u32 left = EHP_PHP_MAX_FRAMES - buf->total;
	if (left > EHP_PHP_MAX_FRAMES)
		left = 0;
	if (room > EHP_MAX_EVENT_FRAMES)
		room = EHP_MAX_EVENT_FRAMES;
#pragma clang loop unroll(disable)
	for (int i = 0; i < PHP_STEP_FRAMES; i++) {
		if (!ex || (ex & 7)) {
			why = ex ? EHP_PHP_STOP_BAD_FRAME : EHP_PHP_STOP_NO_FRAMES;
			break;
		}
		if (!left) {
			why = EHP_PHP_STOP_TOO_DEEP;
			break;
		}
		__u64 base = ex - buf->win_lo;
		if (ex < buf->win_lo || base > PHP_WIN || base + PHP_EX_READ > buf->win_len) {
			int at = php_view(buf, ex);
			if (at < 0) {
				why = EHP_PHP_STOP_READ_FAULT;
				break;
			}
			base = (__u32)at;
		}
		EHP_CLAMP_UMAX(base, PHP_WIN);
		__u64 func = PHP_EX_U64(buf, base, p->ex_func);
		if (!func || (func & 7)) {
			why = EHP_PHP_STOP_BAD_FRAME;
			break;
		}
		__u64 opline = ex == buf->leaf_ex ? buf->leaf_opline : PHP_EX_U64(buf, base, p->ex_opline);
		__u32 info = (__u32)(PHP_EX_U64(buf, base, p->ex_call_info) >> ((p->ex_call_info & 4) * 8));
		__u64 prev = PHP_EX_U64(buf, base, p->ex_prev);
		/* The function's type only where it decides the VM call's end. */
		__u8 type = 0;
		if ((info & p->call_top) && bpf_probe_read_user(&type, 1, (void *)func)) {
			why = EHP_PHP_STOP_READ_FAULT;
			break;
		}
		/* An internal function's frame has no opline of its own (user
		 * space gives such a frame no line). */
		__u32 aux = opline ? (__u32)(opline >> EHP_PHP_OP_SHIFT) & EHP_PHP_OPLINE_MASK : EHP_INTERP_AUX_UNKNOWN;
		__u64 at = slot + k;
		if (k >= room || at >= EHP_MAX_EVENT_FRAMES) {
			buf->full = 1;
			break;
		}
		EHP_CLAMP_UMAX(at, EHP_MAX_EVENT_FRAMES - 1); /* in the register indexing */
		s->frames[at] = EHP_INTERP_FRAME(EHP_INTERP_PHP, func, aux);
		k++;
		left--;
		if (prev == ex) {
			ex = 0;
			why = EHP_PHP_STOP_BAD_FRAME; /* its own caller: no VM makes one */
			break;
		}
		ex = prev;
		if ((info & p->call_top) && type != EHP_PHP_INTERNAL_FUNCTION) {
			end = 1;
			break;
		}
	}
	buf->k = k;
	buf->total = EHP_PHP_MAX_FRAMES - left;
	buf->cursor = ex;
	if (why)
		php_stop(buf, s, why);
	else if (end)
		php_end_vm(buf, s, PHP_IDLE);
}

/* At a pc in the VM: its native frame comes off the sample until its PHP
 * frames are out; the sample's first VM frame reads the current frame. */
EHP_INLINE int php_at_vm(struct php_buf *buf, struct scratch *s)
{
	__u64 at = buf->at - 1;
	if (at >= EHP_MAX_EVENT_FRAMES)
		return 0;
	EHP_CLAMP_UMAX(at, EHP_MAX_EVENT_FRAMES - 1);
	buf->vm_value = s->frames[at];
	buf->at = (__u32)at;
	buf->room++;
	buf->state = PHP_FRAMES;
	if (!buf->started) {
		buf->started = 1;
		if (bpf_probe_read_user(&buf->cursor, sizeof(buf->cursor), (void *)buf->proc.current_execute_data)) {
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
	__u32 limit = cfg.max_frames < EHP_MAX_USER_FRAMES ? cfg.max_frames : EHP_MAX_USER_FRAMES;
	buf->at = at;
	buf->room = n < limit ? limit - n : 0;
	buf->k = 0;
	buf->full = 0;
	if (buf->state == PHP_IDLE && !php_at_vm(buf, s))
		return PHP_STEP_NATIVE;
	if (buf->state == PHP_FRAMES && !buf->full)
		php_frames(buf, s);
	__u32 delta = buf->at + buf->k + 1 - at;
	__u32 act = buf->full ? PHP_ACT_FULL : buf->native_next ? PHP_ACT_NATIVE : PHP_ACT_NEXT;
	buf->native_next = 0;
	/* Leaving JIT code: the native step is execute_ex's (jit_resume). */
	__u64 pc = s->exact ? s->pc : s->pc - 1;
	if (act == PHP_ACT_NATIVE && buf->proc.jit_resume && pc >= buf->proc.vm_begin[1] && pc < buf->proc.vm_end[1]) {
		s->pc = buf->proc.jit_resume;
		s->exact = 1;
	}
	s->php_busy = buf->state == PHP_FRAMES;
	if (buf->state == PHP_OFF)
		__builtin_memset(s->php_vm, 0, sizeof(s->php_vm));
	return (act << 16) | (delta & 0xffff);
}

#endif /* EHPROF_BPF_PHP_BPF_H_ */
