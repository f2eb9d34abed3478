/* One VM call's control frames, read inside rb_step (bpf/ruby.bpf.h, a
 * global function verified once on its own) through the windows of
 * bpf/ruby_window.bpf.h: each frame's words into the sample, up to the
 * one that ends the VM call. Included by bpf/ruby.bpf.h. */
#ifndef EHPROF_BPF_RUBY_FRAMES_BPF_H_
#define EHPROF_BPF_RUBY_FRAMES_BPF_H_

#include "bpf/ruby_window.bpf.h"

/* Whether the thread's current control frame (the first the walk looked
 * at: the caller tests that), flagged FINISH, is one C code pushed for a block or method it calls and whose
 * rb_vm_exec has not started yet (rb_yield's setup): its pc still at the
 * iseq's first instruction, which the VM loop steps past as it starts one,
 * and the sample not taken in the VM loop itself (which may be just
 * starting it). Its frames then belong to the VM call below it, not to one
 * of their own. Not so in JIT code, which runs the frame from its first pc
 * on. */
EHP_INLINE int rb_not_entered(struct rb_buf *buf, __u64 iseq, __u64 pc)
{
	__u64 *body = &buf->env[0], *encoded = &buf->env[1]; /* not on the stack, as rb_find_cfp's */
	if (buf->vm_leaf || buf->jit || !iseq || !pc)
		return 0;
	return rb_read_u64(iseq + buf->proc.iseq_body, body) &&
	       rb_read_u64(*body + buf->proc.body_encoded, encoded) && pc == *encoded;
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
		EHP_LAUNDER(buf); /* as in rb_frames */
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

/* A Ruby frame's words (bpf/ehprof_abi.h) from its env's words: a C
 * method's entry; a method's entry; or its iseq and, for a block's, its
 * method's entry. 0 when one did not fit. */
EHP_INLINE int rb_put_frame(struct rb_buf *buf, struct scratch *s, __u64 *env, __u64 iseq, __u64 pc)
{
	__u32 flags = (__u32)env[2], magic = flags & RB_FRAME_MAGIC_MASK;
	__u64 me = env[0];
	/* A C frame without its method entry yet (JIT code writes the frame
	 * it pushes field by field): no word, as no name. */
	if (magic == RB_FRAME_MAGIC_CFUNC)
		return !me || rb_push(buf, s, EHP_INTERP_FRAME(EHP_INTERP_RUBY, me, EHP_INTERP_AUX_UNKNOWN));
	if ((flags & RB_FRAME_FLAG_CFRAME) || !iseq || !pc)
		return 1;
	__u64 aux = ehp_ruby_pc_aux(pc);
	if ((flags & RB_ENV_FLAG_LOCAL) && magic == RB_FRAME_MAGIC_METHOD && me)
		return rb_push(buf, s, EHP_INTERP_FRAME(EHP_INTERP_RUBY, me, aux));
	if (!rb_push(buf, s, EHP_INTERP_FRAME(EHP_INTERP_RUBY, iseq, aux)))
		return 0;
	if (flags & RB_ENV_FLAG_LOCAL)
		return 1;
	me = rb_local_method(buf, env[1]);
	return !me || rb_push(buf, s, EHP_INTERP_FRAME(EHP_INTERP_RUBY, me, EHP_RUBY_AUX_METHOD));
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

/* After a step's RB_FRAMES_MAX frames, a run of plain method frames (a
 * method's own env, not C's, not FINISH: recursion, a chain of calls)
 * whose control frames and envs the windows already hold, each the word
 * rb_put_frame gives it. In rb_scan_step (bpf/ruby.bpf.h), a global
 * function of its own, so the verifier walks this loop once, not once for
 * every way through rb_frames (in rb_step, 6.1 refused a loop this tight:
 * "the sequence of 8193 jumps is too complex"). How many frames the
 * windows, the sample and RB_CFP_MAX leave room for is worked out before
 * the loop, whose turns then check only the frame: its env in the value
 * window and its flags. The fields at 3.1's and 3.3's offsets (pc, iseq,
 * ep at 0, 16, 32). */
EHP_INLINE void rb_scan(struct rb_buf *buf, struct scratch *s)
{
	struct ehp_ruby_proc *p = &buf->proc;
	if (buf->jit || p->cfp_pc != 0 || p->cfp_iseq != 16 || p->cfp_ep != 32)
		return; /* a JIT frame's frames end at the first with no jit_return */
	__u64 len = p->cfp_size, cfp = buf->cfp, off = cfp - buf->win_lo;
	__u32 k = buf->out.k, looked = buf->looked, win_len = buf->win_len;
	__u64 slot = (__u64)buf->out.at + k, val_lo = buf->val_lo, val_len = buf->val_len;
	if (len < 40 || len > RB_CFP_READ_MAX || off > RB_WIN || off + len > win_len || k >= buf->out.room ||
	    slot >= EHP_MAX_EVENT_FRAMES || looked >= RB_CFP_MAX || val_len < 24 || val_len > RB_WIN)
		return;
	/* Frames that fit: in the window, the sample, the look limit. */
	__u64 n = (win_len - off) / len, room = buf->out.room - k;
	if (n > room)
		n = room;
	if (n > EHP_MAX_EVENT_FRAMES - slot)
		n = EHP_MAX_EVENT_FRAMES - slot;
	if (n > RB_CFP_MAX - looked)
		n = RB_CFP_MAX - looked;
	/* Nothing carried from turn to turn but i (o and at are made anew
	 * each turn), and no branch but the loop's ways out: the bounds above
	 * already hold o, eoff and at where the verifier wants them, which it
	 * cannot see; clamping them would give it a state for each way
	 * through the clamps. */
	__u64 env_max = val_len - 24, i;
#pragma clang loop unroll(disable)
	for (i = 0; i < RB_SCAN_MAX; i++) {
		__u64 turn = i;
		EHP_LAUNDER(turn); /* or the compiler carries o, adding len */
		__u64 o = off + turn * len, at = slot + turn;
		__u64 *f = (__u64 *)(buf->b + o);
		if (i >= n || o > RB_WIN || at >= EHP_MAX_EVENT_FRAMES)
			break;
		__u64 pc = f[0], iseq = f[2], ep = f[4];
		__u64 eoff = ep - 16 - val_lo;
		if ((ep & 7) || eoff > env_max || eoff > RB_WIN - 24)
			break;
		__u64 *env = (__u64 *)(buf->val + eoff);
		__u64 me = env[0];
		__u32 flags = (__u32)env[2];
		if ((flags & (RB_FRAME_MAGIC_MASK | RB_ENV_FLAG_LOCAL | RB_FRAME_FLAG_FINISH | RB_FRAME_FLAG_CFRAME)) !=
			    (RB_FRAME_MAGIC_METHOD | RB_ENV_FLAG_LOCAL) ||
		    !me || !iseq || !pc)
			break;
		s->frames[at] = EHP_INTERP_FRAME(EHP_INTERP_RUBY, me, ehp_ruby_pc_aux(pc));
	}
	buf->out.k = k + (__u32)i;
	buf->looked = looked + (__u32)i;
	buf->cfp = cfp + i * len;
}

/* The current VM call's next control frames (up to RB_FRAMES_MAX). The
 * cursor stays in a register through the loop and goes back to buf at its
 * end; the output slot and the count stay in buf (in registers, their
 * spills passed 6.1's 512-byte stack of the call chain). */
EHP_INLINE void rb_frames(struct rb_buf *buf, struct scratch *s)
{
	struct ehp_ruby_proc *p = &buf->proc;
	__u64 cfp = buf->cfp;
	__u32 len = p->cfp_size, why = 0, end = 0;
	if (len > RB_CFP_READ_MAX || len < 32 || (cfp & 7)) {
		rb_stop(buf, s, EHP_RUBY_STOP_BAD_FRAME);
		return;
	}
#pragma clang loop unroll(disable)
	for (int i = 0; i < RB_FRAMES_MAX; i++) {
		/* buf anew each frame, so that the addresses of its windows are
		 * not kept across the loop: in 6.1's 512-byte stack of the call
		 * chain, rb_step has no room for their spills. */
		EHP_LAUNDER(buf);
		if (++buf->looked > RB_CFP_MAX) {
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
		if (!rb_put_frame(buf, s, env, iseq, pc))
			break; /* the depth limit: this frame is taken again by no one */
		cfp += len;
		if (flags & RB_FRAME_FLAG_FINISH) {
			end = 1;
			buf->fin_iseq = iseq;
			buf->fin_pc = pc;
			break;
		}
	}
	buf->cfp = cfp;
	/* Out of the loop, whose every turn the verifier walks anew: a first
	 * frame not entered yet goes on to the next step's frames. */
	if (end && buf->looked == 1 && rb_not_entered(buf, buf->fin_iseq, buf->fin_pc))
		end = 0;
	if (why)
		rb_stop(buf, s, why);
	else if (end)
		rb_end_vm(buf, s, RB_IDLE);
	else if (!buf->out.full)
		buf->scan = 1; /* rb_scan_step's, after this step */
}


#endif /* EHPROF_BPF_RUBY_FRAMES_BPF_H_ */
