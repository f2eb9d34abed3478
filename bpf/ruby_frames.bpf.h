/* One VM call's control frames, read inside rb_step (bpf/ruby.bpf.h, a
 * global function verified once on its own): the per-CPU state of the
 * Ruby walk, the window control frames are read through (RB_WIN bytes a
 * read, from the cursor up), the window of the VM's value stack each
 * frame's env (ep[-2..0]: method entry, flags) is read through (RB_WIN
 * bytes a read, down from the env: outer frames' envs lie below), the
 * stop markers. Included by bpf/ruby.bpf.h. */
#ifndef EHPROF_BPF_RUBY_FRAMES_BPF_H_
#define EHPROF_BPF_RUBY_FRAMES_BPF_H_

/* Control frames per rb_step; and bytes of control frames (64 of 3.1's
 * 64-byte frames), or of the value stack, read at once: bench/ruby_cost.py's
 * 52 frames in one read of each. */
#define RB_FRAMES_MAX 16
#define RB_WIN 4096
/* Control frames of one thread the walk looks at, at most. */
#define RB_CFP_MAX 4096
/* Envs a block's env leads through to its method's, at most. */
#define RB_EP_HOPS 4
/* The farthest below the thread pointer a static TLS block is taken to
 * lie (glibc's static TLS: the modules loaded at start, and a surplus). */
#define RB_STATIC_TLS_MAX (1u << 20)
/* The largest control frame the walk takes (3.1's is 64 bytes); the
 * offsets in it, multiples of 8 below it (agent/ruby/ruby_binary.cc). */
#define RB_CFP_READ_MAX 128
#define RB_CFP_FIELD_MASK (RB_CFP_READ_MAX - 8)

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
	__u8 pad[2];
	struct py_out out;
	__u64 env[3];	 /* ep[-2], ep[-1], ep[0] of an env off the VM stack */
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

/* The address of the thread's ruby_current_ec slot: fsbase - tls_back
 * once learned, else through the DTV. The distance is learned when the
 * DTV says libruby's block is static TLS (glibc's dtv_t {val, to_free}:
 * to_free 0) lying just below the thread pointer: then it is the same for
 * every thread of the process. */
EHP_INLINE __u64 rb_ec_slot(struct rb_buf *buf)
{
	struct ehp_ruby_proc *p = &buf->proc;
	__u64 dtv = 0, entry[2] = {0, 0};
	if (p->tls_back)
		return buf->fsbase - p->tls_back;
	if (!rb_read_u64(buf->fsbase + 8, &dtv) ||
	    bpf_probe_read_user(entry, sizeof(entry), (void *)(dtv + p->tls_module * 16)))
		return 0;
	__u64 slot = entry[0] + p->tls_offset;
	if (!entry[1] && slot < buf->fsbase && buf->fsbase - slot <= RB_STATIC_TLS_MAX && !(slot & 7)) {
		struct ehp_ruby_proc *live = bpf_map_lookup_elem(&ruby_procs, &buf->pid);
		if (live && live->tls_module == p->tls_module && live->tls_offset == p->tls_offset)
			live->tls_back = (__u32)(buf->fsbase - slot);
	}
	return slot;
}

/* The thread's current control frame and the end of its control frames,
 * from its execution context (ruby_current_ec in libruby's TLS): its
 * {vm_stack, vm_stack_size, cfp} in one read where they lie side by side
 * (as since 2.5). */
EHP_INLINE int rb_find_cfp(struct rb_buf *buf)
{
	struct ehp_ruby_proc *p = &buf->proc;
	__u64 slot = rb_ec_slot(buf), ec = 0, w[3] = {0, 0, 0};
	if (!slot || !rb_read_u64(slot, &ec) || !ec)
		return 0;
	if (p->ec_vm_stack_size == p->ec_vm_stack + 8 && p->ec_cfp == p->ec_vm_stack + 16) {
		if (bpf_probe_read_user(w, sizeof(w), (void *)(ec + p->ec_vm_stack)))
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

/* Whether the thread's current control frame (looked is 1), flagged
 * FINISH, is one C code pushed for a block or method it calls and whose
 * rb_vm_exec has not started yet (rb_yield's setup): its pc still at the
 * iseq's first instruction, which the VM loop steps past as it starts one,
 * and the sample not taken in the VM loop itself (which may be just
 * starting it). Its frames then belong to the VM call below it, not to one
 * of their own. Not so in JIT code, which runs the frame from its first pc
 * on. */
EHP_INLINE int rb_not_entered(struct rb_buf *buf, __u32 looked, __u64 iseq, __u64 pc)
{
	__u64 body = 0, encoded = 0;
	if (looked != 1 || buf->vm_leaf || buf->jit || !iseq || !pc)
		return 0;
	return rb_read_u64(iseq + buf->proc.iseq_body, &body) &&
	       rb_read_u64(body + buf->proc.body_encoded, &encoded) && pc == encoded;
}

/* The method entry of the method whose env a block's env leads to (ep[-1]:
 * the previous env, tagged 1), at most RB_EP_HOPS envs up; 0 when it is no
 * method's (a block in <main> or a class body) or not reached. Inlined in
 * rb_step, not a global function of its own: a fourth call level (the
 * sampler, the walk's callback, rb_step, this) passes 6.1's 512-byte
 * limit on the stack of a call chain. */
EHP_INLINE __u64 rb_local_method(struct rb_buf *buf, __u64 prev)
{
#pragma clang loop unroll(disable)
	for (int i = 0; i < RB_EP_HOPS; i++) {
		__u64 *env = (prev & 1) ? rb_env(buf, prev & ~3ull) : 0;
		if (!env)
			return 0;
		__u32 flags = (__u32)env[2];
		if (flags & RB_ENV_FLAG_LOCAL)
			return (flags & RB_FRAME_MAGIC_MASK) == RB_FRAME_MAGIC_METHOD ? env[0] : 0;
		prev = env[1];
	}
	return 0;
}

/* Where a VM call's frames go: the output slots from at, the first lim of
 * them (out's room, and the sample's end), k written. */
struct rb_put_at {
	__u32 at;
	__u32 lim;
	__u32 k;
};

/* One frame word into the sample; 0 when it does not fit (out.full). */
EHP_INLINE int rb_put(struct rb_buf *buf, struct scratch *s, struct rb_put_at *o, __u64 value)
{
	__u64 at = o->at + o->k;
	if (o->k >= o->lim) {
		buf->out.full = 1;
		return 0;
	}
	EHP_CLAMP_UMAX(at, EHP_MAX_EVENT_FRAMES - 1); /* in the register indexing */
	s->frames[at] = value;
	o->k++;
	return 1;
}

/* A Ruby frame's words (bpf/ehprof_abi.h) from its env's words: a C
 * method's entry; a method's entry; or its iseq and, for a block's, its
 * method's entry. 0 when one did not fit. */
EHP_INLINE int rb_put_frame(struct rb_buf *buf, struct scratch *s, struct rb_put_at *o, __u64 *env, __u64 iseq,
			    __u64 pc)
{
	__u32 flags = (__u32)env[2], magic = flags & RB_FRAME_MAGIC_MASK;
	__u64 me = env[0];
	/* A C frame without its method entry yet (JIT code writes the frame
	 * it pushes field by field): no word, as no name. */
	if (magic == RB_FRAME_MAGIC_CFUNC)
		return !me || rb_put(buf, s, o, EHP_INTERP_FRAME(EHP_INTERP_RUBY, me, EHP_INTERP_AUX_UNKNOWN));
	if ((flags & RB_FRAME_FLAG_CFRAME) || !iseq || !pc)
		return 1;
	__u64 aux = (pc >> 3) % EHP_RUBY_PC_MOD;
	if ((flags & RB_ENV_FLAG_LOCAL) && magic == RB_FRAME_MAGIC_METHOD && me)
		return rb_put(buf, s, o, EHP_INTERP_FRAME(EHP_INTERP_RUBY, me, aux));
	if (!rb_put(buf, s, o, EHP_INTERP_FRAME(EHP_INTERP_RUBY, iseq, aux)))
		return 0;
	if (flags & RB_ENV_FLAG_LOCAL)
		return 1;
	me = rb_local_method(buf, env[1]);
	return !me || rb_put(buf, s, o, EHP_INTERP_FRAME(EHP_INTERP_RUBY, me, EHP_RUBY_AUX_METHOD));
}

/* A JIT frame's control frames begin (bpf/ruby_yjit.bpf.h), or a VM
 * loop's. */
EHP_INLINE void rb_jit_begin(struct rb_buf *buf, __u32 jit)
{
	buf->jit = jit != 0;
	buf->jit_taken = 0;
}

/* Whether a JIT frame's control frames end before the one at off in the
 * window (len bytes): YJIT writes jit_return, the control frame's last
 * word, in every frame it pushes and in the one it is entered for, and
 * the VM's vm_push_frame zeroes it; so after the first, a frame with none
 * is the interpreter's, whose VM loop lies below the JIT frame. A frame
 * once entered through JIT code and left to the interpreter keeps its
 * jit_return: its frames then stay with the JIT frame's, in their order. */
EHP_INLINE int rb_jit_call_done(struct rb_buf *buf, __u64 off, __u32 len)
{
	if (!buf->jit)
		return 0;
	if (buf->jit_taken && !rb_cfp_u64(buf, off, len - 8))
		return 1;
	buf->jit_taken = 1;
	return 0;
}

/* The current VM call's next control frames (up to RB_FRAMES_MAX). The
 * cursor, the count and the output slot stay in registers through the
 * loop and go back to buf at its end (a store to the sample's frames could
 * alias buf for the compiler, which would reload them after every frame). */
EHP_INLINE void rb_frames(struct rb_buf *buf, struct scratch *s)
{
	struct ehp_ruby_proc *p = &buf->proc;
	__u64 cfp = buf->cfp;
	__u32 len = p->cfp_size, looked = buf->looked, why = 0, end = 0;
	struct rb_put_at o = {.at = buf->out.at, .k = buf->out.k};
	o.lim = buf->out.at < EHP_MAX_EVENT_FRAMES ? EHP_MAX_EVENT_FRAMES - buf->out.at : 0;
	if (o.lim > buf->out.room)
		o.lim = buf->out.room;
	if (len > RB_CFP_READ_MAX || len < 32 || (cfp & 7)) {
		rb_stop(buf, s, EHP_RUBY_STOP_BAD_FRAME);
		return;
	}
#pragma clang loop unroll(disable)
	for (int i = 0; i < RB_FRAMES_MAX; i++) {
		if (++looked > RB_CFP_MAX) {
			why = EHP_RUBY_STOP_BAD_FRAME;
			break;
		}
		int at = rb_view(buf, cfp, len);
		if (at < 0) {
			why = (__u32)-at;
			break;
		}
		__u64 off = (__u32)at;
		EHP_CLAMP_UMAX(off, RB_WIN);
		if (rb_jit_call_done(buf, off, len)) {
			end = 1;
			break;
		}
		__u64 pc = rb_cfp_u64(buf, off, p->cfp_pc);
		__u64 iseq = rb_cfp_u64(buf, off, p->cfp_iseq);
		__u64 *env = rb_env(buf, rb_cfp_u64(buf, off, p->cfp_ep));
		if (!env) {
			why = EHP_RUBY_STOP_READ_FAULT;
			break;
		}
		__u32 flags = (__u32)env[2];
		if (!rb_put_frame(buf, s, &o, env, iseq, pc))
			break; /* the depth limit: this frame is taken again by no one */
		cfp += len;
		if ((flags & RB_FRAME_FLAG_FINISH) && !rb_not_entered(buf, looked, iseq, pc)) {
			end = 1;
			break;
		}
	}
	buf->cfp = cfp;
	buf->looked = looked;
	buf->out.k = o.k;
	if (why)
		rb_stop(buf, s, why);
	else if (end)
		rb_end_vm(buf, s, RB_IDLE);
}


#endif /* EHPROF_BPF_RUBY_FRAMES_BPF_H_ */
