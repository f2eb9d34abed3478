/* The frames of one PHP VM call, read inside php_step (bpf/php.bpf.h, a
 * global function verified once on its own): the VM stack segment the
 * frames sit in, the window they are read through, and the frame loop.
 * Included by bpf/php.bpf.h after struct php_buf and its push/stop
 * helpers. */
#ifndef EHPROF_BPF_PHP_FRAMES_BPF_H_
#define EHPROF_BPF_PHP_FRAMES_BPF_H_

/* executor_globals' fields from vm_stack_top to current_execute_data, in
 * the order every PHP 7 and 8 lays them out: the current frame and its VM
 * stack segment in one read. */
struct php_eg_stack {
	__u64 vm_stack_top;
	__u64 vm_stack_end;
	__u64 vm_stack;
	__u64 vm_stack_page_size;
	__u64 current_execute_data;
};
/* A VM stack segment larger than this is taken for a layout this does not
 * know (PHP's are 256 KiB, or one frame's size when larger). */
#define PHP_SEG_MAX (1ull << 30)

/* Reads the current frame into the cursor and, when the fields before it
 * make a VM stack segment that holds the frames pushed so far
 * (vm_stack <= vm_stack_top <= vm_stack_end), that segment: the window
 * then reaches down to its start. The read goes through the window (no
 * frame is in it yet). Nonzero when the current frame cannot be read. */
EHP_INLINE int php_read_current(struct php_buf *buf)
{
	__u64 at = buf->proc.current_execute_data;
	struct php_eg_stack *eg = (struct php_eg_stack *)buf->win;
	buf->win_len = 0;
	if (bpf_probe_read_user(eg, sizeof(*eg), (void *)(at - 32))) {
		buf->seg_lo = 0;
		buf->seg_hi = 0;
		return bpf_probe_read_user(&buf->cursor, sizeof(buf->cursor), (void *)at) != 0;
	}
	__u64 lo = eg->vm_stack, hi = eg->vm_stack_top;
	buf->cursor = eg->current_execute_data;
	if (!lo || (lo & 7) || hi < lo || eg->vm_stack_end < hi || eg->vm_stack_end - lo > PHP_SEG_MAX)
		lo = hi = 0;
	buf->seg_lo = lo;
	buf->seg_hi = hi;
	return 0;
}

/* Reads a window holding the frame at ex (8-aligned): from the start of
 * the VM stack segment it is in, or PHP_WIN below its end, else from its
 * page's start (mapped when the frame is); the frame alone when that read
 * fails. Where the frame is in the window, -1 when it cannot be read. */
EHP_INLINE int php_view(struct php_buf *buf, __u64 ex)
{
	__u64 end = ex + PHP_EX_READ, lo;
	if (ex >= buf->seg_lo && end <= buf->seg_hi)
		lo = end - buf->seg_lo > PHP_WIN + PHP_EX_READ ? end - (PHP_WIN + PHP_EX_READ) : buf->seg_lo;
	else
		lo = ex & ~(__u64)(PAGE_SIZE_BYTES - 1);
	__u64 size = end - lo;
	EHP_CLAMP_UMAX(size, PHP_WIN + PHP_EX_READ);
	if (bpf_probe_read_user(buf->win, size, (void *)lo)) {
		/* A segment with a hole below the frame (a lie: PHP writes
		 * all of it) is given up: one failed read a sample at most. */
		buf->seg_lo = 0;
		buf->seg_hi = 0;
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

/* Frame offsets past which a frame is not in the window: base < span
 * holds the frame's PHP_EX_READ bytes (0 when the window holds none). */
EHP_INLINE __u64 php_span(struct php_buf *buf)
{
	return buf->win_len >= PHP_EX_READ ? buf->win_len - PHP_EX_READ + 1 : 0;
}

/* The leaf frame's word takes the opline the VM's register held. */
EHP_INLINE void php_leaf_line(struct php_buf *buf, struct scratch *s, __u32 slot)
{
	__u64 at = slot;
	EHP_CLAMP_UMAX(at, EHP_MAX_EVENT_FRAMES - 1);
	__u64 aux = (buf->leaf_opline >> EHP_PHP_OP_SHIFT) & EHP_PHP_OPLINE_MASK;
	__u64 w = s->frames[at] & ~((__u64)EHP_INTERP_AUX_UNKNOWN << EHP_INTERP_OBJECT_BITS);
	s->frames[at] = w | (aux << EHP_INTERP_OBJECT_BITS);
}

/* The fields of a zend_execute_data the walk reads, from its func: user
 * space finds func and prev_execute_data's offsets in the binary's code
 * and takes the rest as every PHP 7 and 8 lays them out (opline at 0,
 * This.u1.type_info, the call info, 16 after func, prev 24 after func). */
#define PHP_FN_INFO 16
#define PHP_FN_PREV 24
/* The largest func offset whose fields are in a frame's PHP_EX_READ bytes. */
#define PHP_FN_MAX (PHP_EX_READ - PHP_FN_PREV - 8)

/* Whether proc's frame offsets are the layout php_frames reads. */
EHP_INLINE int php_layout_ok(const struct ehp_php_proc *p)
{
	return p->ex_opline == 0 && p->ex_func <= PHP_FN_MAX && !(p->ex_func & 7) &&
	       p->ex_call_info == p->ex_func + PHP_FN_INFO && p->ex_prev == p->ex_func + PHP_FN_PREV;
}

/* Up to PHP_STEP_FRAMES frames of the current VM call, from the cursor.
 * The loop touches the window alone: a read where a frame leaves it, the
 * function's type at the call's first frame; its fields are loads at
 * constant offsets from the frame's func. No line is read (the opline's
 * aux is arithmetic); the leaf's opline from the VM's register is put in
 * after the loop. */
EHP_INLINE void php_frames(struct php_buf *buf, struct scratch *s)
{
	__u64 o_func = buf->proc.ex_func & (PHP_EX_READ - 8);
	__u32 call_top = buf->proc.call_top;
	if (o_func > PHP_FN_MAX) { /* php_begin takes no such process */
		php_stop(buf, s, EHP_PHP_STOP_BAD_FRAME);
		return;
	}
	/* Bounded in the register the loads take (6.1 kept only the mask's
	 * bound, 56, and refused prev's load past the window). */
	EHP_CLAMP_UMAX(o_func, PHP_FN_MAX);
	__u64 ex = buf->cursor;
	__u64 win_lo = buf->win_lo, span = php_span(buf);
	__u32 why = 0;
	__u8 end = 0, out = 0;
	__u32 k0 = buf->out.k, slot = buf->out.at + k0, i = 0;
	__u32 left = EHP_PHP_MAX_FRAMES - buf->total;
	if (left > EHP_PHP_MAX_FRAMES)
		left = 0;
	/* Frames this step may write: the step's, the sample's PHP frames',
	 * the walk's room and the sample's slots, whichever ends first. */
	__u32 fit = buf->out.room > k0 ? buf->out.room - k0 : 0;
	__u32 slots = slot < EHP_MAX_EVENT_FRAMES ? EHP_MAX_EVENT_FRAMES - slot : 0;
	if (fit > slots)
		fit = slots;
	__u32 lim = fit < left ? fit : left;
#pragma clang loop unroll(disable)
	for (i = 0; i < PHP_STEP_FRAMES; i++) {
		if (i >= lim) {
			out = 1;
			break;
		}
		if (ex & 7) {
			why = EHP_PHP_STOP_BAD_FRAME;
			break;
		}
		__u64 base = ex - win_lo;
		if (base >= span) {
			if (!ex) {
				why = EHP_PHP_STOP_NO_FRAMES;
				break;
			}
			int at = php_view(buf, ex);
			if (at < 0) {
				why = EHP_PHP_STOP_READ_FAULT;
				break;
			}
			base = (__u32)at;
			win_lo = buf->win_lo;
			span = php_span(buf);
		}
		EHP_CLAMP_UMAX(base, PHP_WIN);
		__u8 *f = buf->win + base;
		__u8 *fn = f + o_func;
		__u64 func = *(__u64 *)fn;
		if (!func || (func & 7)) {
			why = EHP_PHP_STOP_BAD_FRAME;
			break;
		}
		__u64 opline = *(__u64 *)f;
		__u32 top = *(__u32 *)(fn + PHP_FN_INFO) & call_top;
		__u64 prev = *(__u64 *)(fn + PHP_FN_PREV);
		/* An internal function's frame has no opline of its own (user
		 * space gives such a frame no line). */
		__u32 aux = opline ? (__u32)(opline >> EHP_PHP_OP_SHIFT) & EHP_PHP_OPLINE_MASK : EHP_INTERP_AUX_UNKNOWN;
		/* The slot through memory: the verifier then knows nothing of
		 * it but the clamp, so the loop's count is not a precise value
		 * and the loop's exits at different counts are one state (each
		 * taken on its own cost 0.7 M instructions at 64 a step). */
		*(volatile __u64 *)&buf->slot = slot + i;
		__u64 at = *(volatile __u64 *)&buf->slot;
		EHP_CLAMP_UMAX(at, EHP_MAX_EVENT_FRAMES - 1); /* in the register indexing */
		s->frames[at] = EHP_INTERP_FRAME(EHP_INTERP_PHP, func, aux);
		if (prev == ex) {
			i++;
			ex = 0;
			why = EHP_PHP_STOP_BAD_FRAME; /* its own caller: no VM makes one */
			break;
		}
		ex = prev;
		/* The function's type only where it decides the VM call's end. */
		if (top) {
			__u8 type = 0;
			if (bpf_probe_read_user(&type, 1, (void *)func))
				why = EHP_PHP_STOP_READ_FAULT;
			else if (type != EHP_PHP_INTERNAL_FUNCTION)
				end = 1;
			if (why || end) {
				i++;
				break;
			}
		}
	}
	/* What ended the loop, from buf (fewer values live through it). */
	k0 = buf->out.k;
	slot = buf->out.at + k0;
	if (out && (k0 + i >= buf->out.room || slot + i >= EHP_MAX_EVENT_FRAMES))
		buf->out.full = 1;
	else if (out && buf->total + i >= EHP_PHP_MAX_FRAMES)
		why = EHP_PHP_STOP_TOO_DEEP;
	if (buf->leaf_ex == buf->cursor && i)
		php_leaf_line(buf, s, slot);
	buf->leaf_ex = 0;
	buf->out.k = k0 + i;
	buf->total += i;
	buf->cursor = ex;
	if (why)
		php_stop(buf, s, why);
	else if (end)
		php_end_vm(buf, s, PHP_IDLE);
}

#endif /* EHPROF_BPF_PHP_FRAMES_BPF_H_ */
