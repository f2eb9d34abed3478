/* The Ruby walk's per-CPU state (struct rb_buf) and how it reads the
 * thread's VM stack: the thread's execution context, found through
 * libruby's TLS; the window control frames are read through (RB_WIN bytes
 * a read, from the cursor up); the window of the VM's value stack each
 * frame's env (ep[-2..0]: method entry, previous env, flags) is read
 * through (RB_WIN bytes a read, down from the env: outer frames' envs lie
 * below); the stop markers. Included by bpf/ruby_frames.bpf.h. */
#ifndef EHPROF_BPF_RUBY_WINDOW_BPF_H_
#define EHPROF_BPF_RUBY_WINDOW_BPF_H_

/* Control frames per rb_step; and bytes of control frames (64 of 3.1's
 * 64-byte frames), or of the value stack, read at once: bench/ruby_cost.py's
 * 52 frames in one read of each. Few general frames a step and many of
 * rb_scan's, whose loop costs about half the instructions a frame: runs
 * of method calls are most of a deep stack (ruby_cost.py, interleaved with
 * 16 and 32: p10 +2.12 against +2.93 us); 8 and 48 also keep the
 * verifier's work below 16 and 32's on 6.18 (220K against 230K) and 6.1's
 * limit of 8,192 branches pending (64 a step went past it, as did a
 * general loop handing runs to rb_scan as soon as it met one). */
#define RB_FRAMES_MAX 8
/* Plain method frames per step after those (rb_scan). */
#define RB_SCAN_MAX 48
#define RB_WIN 4096
/* Control frames of one thread the walk looks at, at most. */
#define RB_CFP_MAX 4096
/* Envs a block's env leads through to its method's, at most. */
#define RB_EP_HOPS 4
/* The largest control frame the walk takes (3.1's is 64 bytes); the
 * offsets in it, multiples of 8 below it (agent/ruby/ruby_binary.cc). */
#define RB_CFP_READ_MAX 128
#define RB_CFP_FIELD_MASK (RB_CFP_READ_MAX - 8)

/* The value of v, unknown to the compiler from here on (no computation
 * from it is moved out of the loop it is in). */
#ifdef __bpf__
#define EHP_LAUNDER(v) asm volatile("" : "+r"(v))
#else
#define EHP_LAUNDER(v) ((void)(v))
#endif

/* vm_core.h: ep[0]'s frame magic and flags. */
#define RB_FRAME_MAGIC_MASK 0x7fff0001u
#define RB_FRAME_MAGIC_METHOD 0x11110001u
#define RB_FRAME_MAGIC_CFUNC 0x55550001u
#define RB_ENV_FLAG_LOCAL 0x0002u
#define RB_FRAME_FLAG_FINISH 0x0020u
#define RB_FRAME_FLAG_CFRAME 0x0080u

enum rb_walk_state {
	RB_OFF = 0,    /* not a Ruby process, or the Ruby walk stopped */
	RB_IDLE = 1,   /* native frames; look for vm_exec_core */
	RB_FRAMES = 2, /* pushing one VM call's control frames */
};

/* Per CPU: the sample's Ruby process (copied at its start), the walk's
 * state and the control frame window; in a map value, so none of it
 * multiplies the native walk's verifier states. */
struct rb_buf {
	struct ehp_ruby_proc proc;
	__u64 fsbase;
	__u64 stack;	 /* the thread's VM stack: values up, control frames down */
	__u64 cfp;	 /* the next control frame */
	__u64 cfp_end;	 /* the end of the thread's VM stack */
	__u64 vm_value;	 /* vm_exec_core's native frame, pushed after its frames */
	__u64 win_lo;	 /* the window: control frames from win_lo */
	__u64 val_lo;	 /* the value stack's window from val_lo */
	__u32 win_len;
	__u32 val_len;
	__u32 pid;
	__u32 looked;	 /* control frames looked at in this sample */
	__u8 state;	 /* enum rb_walk_state */
	__u8 native_next; /* the VM call is done: its native step follows */
	__u8 found;	 /* cfp was read from the execution context */
	__u8 vm_leaf;	 /* the first VM loop reached was the sample's leaf frame */
	__u8 jit;	 /* this call's frames are a JIT frame's (bpf/ruby_yjit.bpf.h) */
	__u8 jit_taken;	 /* ... and one of them is pushed */
	__u8 scan;	 /* rb_scan_step goes on from this step's frames */
	__u8 pad[1];
	struct py_out out;
	__u64 env[3];	 /* ep[-2], ep[-1], ep[0] of an env off the VM stack */
	__u64 fin_iseq;	 /* the iseq and pc of the FINISH frame a step ended at */
	__u64 fin_pc;
	__u8 b[RB_WIN + RB_CFP_READ_MAX];
	__u8 val[RB_WIN];
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct rb_buf);
} rb_buf SEC(".maps");


/* One frame word into the sample (0 when it does not fit: out.full). */
EHP_INLINE int rb_push(struct rb_buf *buf, struct scratch *s, __u64 value)
{
	return interp_push(&buf->out, s, value);
}

EHP_INLINE int rb_read_u64(__u64 addr, __u64 *out)
{
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr) == 0;
}

/* The VM call is done (or given up): its native frame follows its frames. */
EHP_INLINE void rb_end_vm(struct rb_buf *buf, struct scratch *s, __u8 next_state)
{
	buf->state = next_state;
	buf->native_next = 1;
	rb_push(buf, s, buf->vm_value);
}

/* The Ruby walk cannot go on: a marker saying why, vm_exec_core's frame,
 * and native frames only from here. */
EHP_INLINE void rb_stop(struct rb_buf *buf, struct scratch *s, __u32 why)
{
	rb_push(buf, s, EHP_INTERP_FRAME(EHP_INTERP_RUBY, 0ull, why));
	rb_end_vm(buf, s, RB_OFF);
}

/* The address of the thread's ruby_current_ec slot (interp_tls_slot),
 * and the distance learned for the process's later walks. */
EHP_INLINE __u64 rb_ec_slot(struct rb_buf *buf)
{
	struct ehp_ruby_proc *p = &buf->proc;
	__u64 slot = interp_tls_slot(buf->fsbase, p->tls_module, p->tls_offset, p->tls_back, buf->env);
	if (buf->env[0]) {
		struct ehp_ruby_proc *live = bpf_map_lookup_elem(&ruby_procs, &buf->pid);
		if (live && live->tls_module == p->tls_module && live->tls_offset == p->tls_offset)
			live->tls_back = (__u32)buf->env[0];
	}
	return slot;
}

/* The thread's current control frame and the end of its control frames,
 * from its execution context (ruby_current_ec in libruby's TLS): its
 * {vm_stack, vm_stack_size, cfp} in one read where they lie side by side
 * (as since 2.5). Read into env, not onto the stack: rb_step's stack is
 * all 6.1's limit on the call chain leaves it. */
EHP_INLINE int rb_find_cfp(struct rb_buf *buf)
{
	struct ehp_ruby_proc *p = &buf->proc;
	__u64 slot = rb_ec_slot(buf), *w = buf->env;
	if (!slot || !rb_read_u64(slot, &w[0]) || !w[0])
		return 0;
	__u64 ec = w[0];
	if (p->ec_vm_stack_size == p->ec_vm_stack + 8 && p->ec_cfp == p->ec_vm_stack + 16) {
		if (bpf_probe_read_user(w, 3 * sizeof(*w), (void *)(ec + p->ec_vm_stack)))
			return 0;
	} else if (!rb_read_u64(ec + p->ec_vm_stack, &w[0]) || !rb_read_u64(ec + p->ec_vm_stack_size, &w[1]) ||
		   !rb_read_u64(ec + p->ec_cfp, &w[2])) {
		return 0;
	}
	__u64 stack = w[0], size = w[1], cfp = w[2];
	if (size > (1u << 24) || cfp < stack)
		return 0;
	buf->stack = stack;
	buf->cfp = cfp;
	buf->cfp_end = stack + size * 8;
	buf->found = 1;
	return 1;
}

/* The control frame at cfp (len bytes) in the window, read anew (up to
 * RB_WIN bytes from cfp up) when the window does not hold it: its offset
 * in b, at most RB_WIN; else the stop reason, negated. A frame in the
 * window lies below the VM stack's end, as the window does. */
EHP_INLINE int rb_view(struct rb_buf *buf, __u64 cfp, __u32 len)
{
	__u64 off = cfp - buf->win_lo; /* huge below win_lo */
	if (off <= RB_WIN && off + len <= buf->win_len)
		return (int)off;
	if (cfp + len > buf->cfp_end || cfp + len < cfp)
		return -EHP_RUBY_STOP_FRAMES_END;
	__u64 size = buf->cfp_end - cfp;
	EHP_CLAMP_UMAX(size, RB_WIN);
	if (bpf_probe_read_user(buf->b, size, (void *)cfp))
		return -EHP_RUBY_STOP_READ_FAULT;
	buf->win_lo = cfp;
	buf->win_len = (__u32)size;
	return 0;
}

/* The word at field (a control frame's word offset) of the control frame
 * at off (at most RB_WIN) in the window: one load. */
EHP_INLINE __u64 rb_cfp_u64(struct rb_buf *buf, __u64 off, __u32 field)
{
	return *(__u64 *)(buf->b + off + (field & RB_CFP_FIELD_MASK));
}

/* ep[-2..0] (method entry, previous env, flags) of the env at ep, when the
 * value stack's window does not hold them: the window read anew, RB_WIN
 * bytes up to ep's end (outer frames' envs lie below); an env off the VM
 * stack (a block's, moved to the heap) read alone into env. */
EHP_INLINE __u64 *rb_env_read(struct rb_buf *buf, __u64 ep)
{
	__u64 lo = ep - 16, hi = ep + 8;
	if (ep & 7)
		return 0;
	if (lo < buf->stack || hi > buf->cfp_end || lo > hi)
		return bpf_probe_read_user(buf->env, sizeof(buf->env), (void *)lo) ? 0 : buf->env;
	__u64 start = hi - buf->stack > RB_WIN ? hi - RB_WIN : buf->stack;
	__u64 size = hi - start;
	EHP_CLAMP_UMAX(size, RB_WIN);
	if (size < sizeof(buf->env) || bpf_probe_read_user(buf->val, size, (void *)start))
		return 0;
	buf->val_lo = start;
	buf->val_len = (__u32)size;
	__u64 off = size - sizeof(buf->env);
	EHP_CLAMP_UMAX(off, RB_WIN - sizeof(buf->env));
	return (__u64 *)(buf->val + off);
}

/* ep[-2..0] of the env at ep: three loads from the window when it holds
 * them (every env of a VM call's frames but a block's moved one lies on the
 * VM stack, mostly in the window read for the first), else rb_env_read.
 * 0 when unreadable. */
EHP_INLINE __u64 *rb_env(struct rb_buf *buf, __u64 ep)
{
	__u64 off = ep - 16 - buf->val_lo; /* huge below val_lo */
	if (!(ep & 7) && off <= RB_WIN - sizeof(buf->env) && off + sizeof(buf->env) <= buf->val_len) {
		EHP_CLAMP_UMAX(off, RB_WIN - sizeof(buf->env));
		return (__u64 *)(buf->val + off);
	}
	return rb_env_read(buf, ep);
}

#endif /* EHPROF_BPF_RUBY_WINDOW_BPF_H_ */
