/* The native walk through Ruby's JIT code (YJIT) in a process of
 * ruby_procs. YJIT's code lives in anonymous executable memory
 * (EHP_MAPPING_ANON) without CFI, and keeps no frame pointer: Ruby 3.1's
 * entry pushes r13, r12 and rbx (the caller's cfp, ec and sp registers)
 * under the return address of the indirect call that entered it (the VM's
 * jit_func call in rb_vm_exec, or in vm_sendish for a method the
 * interpreter calls), and leaves rbp as its caller had it. Calls from Ruby
 * method to Ruby method inside JIT code push control frames only, no
 * native frame, so one JIT frame on the native stack stands for every
 * control frame since its entry.
 *
 * A pc in such memory is taken in three steps: the Ruby walk is asked for
 * the control frames of that JIT call (rb_dwarf_step sees RB_JIT_FRAMES
 * and calls rb_step as at vm_exec_core), leaf-side of the pc's own word;
 * then the native step finds the return address of that entry call among
 * the first RB_JIT_SCAN stack words from sp: the first one that follows
 * an indirect call instruction in the process's file-backed code. That
 * frame's rsp is the word after it, rbp unchanged. A pc in anonymous
 * memory with no such word (memory that is not YJIT's) ends the walk with
 * a Ruby stop marker. YJIT writes a frame's pc only before a call that
 * needs it (a send: the caller's pc, exact; a C call that may raise or
 * allocate), so a leaf running in JIT code shows the line of its last such
 * call, or its first line. The bpf_loop build's only (the tail-call build
 * has no Ruby walk). Included by bpf/walk.bpf.h. */
#ifndef EHPROF_BPF_RUBY_YJIT_BPF_H_
#define EHPROF_BPF_RUBY_YJIT_BPF_H_

/* Stack words above sp looked at for the JIT entry's return address: its
 * three saved registers, and as many more pushed in JIT code. */
#define RB_JIT_SCAN 8

enum rb_jit_state {
	RB_JIT_NONE = 0,   /* not a Ruby process: anonymous code by frame pointer */
	RB_JIT_IDLE = 1,   /* a Ruby process: no JIT frame being taken */
	RB_JIT_FRAMES = 2, /* a JIT pc reached: its control frames next */
	RB_JIT_UNWIND = 3, /* its control frames pushed: its native step next */
};

/* Whether the bytes before ra end an indirect call: call *%reg (ff d0+r,
 * 41 ff d0+r), call *disp8(%reg) (ff 50+r XX), call *disp32(%reg or %rip)
 * (ff 90+r / ff 15, 4 bytes). */
EHP_INLINE int rb_jit_call_before(__u64 ra)
{
	__u8 b[6];
	if (ra < 6 || bpf_probe_read_user(b, sizeof(b), (void *)(ra - 6)))
		return 0;
	if (b[4] == 0xff && (b[5] & 0xf8) == 0xd0)
		return 1;
	if (b[3] == 0xff && (b[4] & 0xf8) == 0x50)
		return 1;
	return b[0] == 0xff && (b[1] == 0x15 || (b[1] & 0xf8) == 0x90);
}

/* The native step out of a JIT frame: the entry call's return address,
 * from the first RB_JIT_SCAN words above sp. */
EHP_INLINE int rb_jit_unwind(struct walk *w)
{
	struct scratch *s = w->s;
	__u64 sp, ra = 0;
	int i, found = 0;
	if (!slot_value(s, EHP_REG_RSP, &sp) || (sp & 7)) {
		w->stop = EHP_STOP_BAD_FRAME;
		return 0;
	}
#pragma clang loop unroll(disable)
	for (i = 0; i < RB_JIT_SCAN; i++) {
		/* Read directly, not through the stack window (whose index the
		 * compiler cannot keep bounded in this loop). */
		if (bpf_probe_read_user(&ra, sizeof(ra), (void *)(sp + 8 * (__u64)i))) {
			w->stop = EHP_STOP_READ_FAULT;
			return 0;
		}
		if (rb_jit_call_before(ra)) {
			found = 1;
			break;
		}
	}
	struct ehp_mapping *m = found ? find_mapping(w->proc, ra - 1) : 0;
	if (!m || !(m->flags & (EHP_MAPPING_HAS_TABLE | EHP_MAPPING_PENDING))) {
		/* Not YJIT's code, or not entered from the VM: said, and no guess. */
		push_frame(w, EHP_INTERP_FRAME(EHP_INTERP_RUBY, 0ull, EHP_RUBY_STOP_JIT_EXIT));
		w->stop = EHP_STOP_BAD_FRAME;
		return 0;
	}
	w->last = m;
	s->regs[EHP_REG_RSP] = sp + 8 * (__u64)i + 8;
	s->valid = (s->valid & REG_BIT(EHP_REG_RBP)) | REG_BIT(EHP_REG_RSP);
	s->pc = ra;
	s->exact = 0;
	return push_frame(w, ra);
}

/* The step of a pc in anonymous memory of a Ruby process: its control
 * frames first while the Ruby walk is on (a step that pushes nothing
 * here: rb_dwarf_step takes them next), then the native step. */
EHP_INLINE int rb_jit_step(struct walk *w)
{
	struct scratch *s = w->s;
	if (s->rb_jit == RB_JIT_IDLE && s->rb_vm[1]) {
		s->rb_jit = RB_JIT_FRAMES;
		return 1;
	}
	s->rb_jit = RB_JIT_IDLE;
	return rb_jit_unwind(w);
}

/* Whether a pc in no known mapping of a Ruby process takes its control
 * frames first (then the walk stops there as it would, guessing no native
 * frame): it may be YJIT's, which mprotects the page it writes code to
 * read-write, so that the maps list it as no code. The frames are the
 * thread's own whichever code that was. */
EHP_INLINE int rb_jit_unmapped(struct scratch *s)
{
	if (s->rb_jit == RB_JIT_IDLE && s->rb_vm[1]) {
		s->rb_jit = RB_JIT_FRAMES;
		return 1;
	}
	if (s->rb_jit != RB_JIT_NONE)
		s->rb_jit = RB_JIT_IDLE;
	return 0;
}

#endif /* EHPROF_BPF_RUBY_YJIT_BPF_H_ */
