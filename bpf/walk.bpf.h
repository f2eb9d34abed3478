/* The user-stack walk: CFI rows from the table maps, frame pointers where a
 * mapping has no table, signal frames through the kernel's ucontext. Used
 * by every program that records a stack (bpf/profiler.bpf.c).
 * Included after bpf/lookup.bpf.h. */
#ifndef EHPROF_BPF_WALK_BPF_H_
#define EHPROF_BPF_WALK_BPF_H_

#define REG_BIT(r) (1u << (r))
#define ALL_REGS ((1u << (EHP_REG_RIP + 1)) - 1)

/* EHP_LOAD_GPRS, ehp_sigcontext: bpf/arch.bpf.h. */

struct walk {
	struct scratch *s;
	struct ehp_proc *proc;
	__u32 base; /* first frame slot of this walk */
	__u32 n;    /* frames so far */
	__u32 pid;
	__u8 stop;
	__u8 python; /* the Python walk is on (bpf/python.bpf.h) */
	__u8 v8;     /* the process is in v8_procs (bpf/v8.bpf.h) */
	/* The mapping of the previous frame: consecutive frames are mostly in
	 * the same file, so this skips most mapping searches. */
	struct ehp_mapping *last;
};

EHP_INLINE int push_frame(struct walk *w, __u64 value)
{
	__u32 at = w->base + w->n;
	if (w->n >= cfg.max_frames || w->n >= EHP_MAX_USER_FRAMES || at >= EHP_MAX_EVENT_FRAMES) {
		w->stop = EHP_STOP_DEPTH_LIMIT;
		return 0;
	}
	w->s->frames[at] = value;
	w->n++;
	return 1;
}

/* The stop reason of a walk that is over: its own, or the depth limit
 * when it ran out of steps. */
EHP_INLINE __u8 walk_stop_reason(const struct walk *w)
{
	return w->stop ? w->stop : EHP_STOP_DEPTH_LIMIT;
}

/* Walk steps between two looks at the clock: a clock read can cost as
 * much as a step (an emulated HPET), and 16 steps of a slow machine stay
 * well inside any budget worth setting. */
#define EHP_BUDGET_EVERY 16

/* The walk time budget: the events of one CPU may spend
 * cfg.walk_budget_ns in every EHP_BUDGET_WINDOW_NS (bpf/ehprof_abi.h).
 * A share of a window, not of one event: a single event the hypervisor
 * or the emulator stalled is not cut for it, while a CPU whose events
 * keep taking more than their share is. This CPU's window as of now, a
 * new one once the last is over. */
EHP_INLINE struct cpu_budget *budget_window(__u64 now)
{
	__u32 zero = 0;
	struct cpu_budget *b = bpf_map_lookup_elem(&cpu_budget, &zero);
	if (b && now - b->window_start >= EHP_BUDGET_WINDOW_NS) {
		b->window_start = now;
		b->used_ns = 0;
	}
	return b;
}

/* Whether the event in s (begun at s->ev.time_ns) and the events before it
 * in its CPU's window have spent the budget; counted once per walk that it
 * stops. */
EHP_INLINE int walk_budget_spent(struct scratch *s)
{
	if (!cfg.walk_budget_ns)
		return 0;
	__u64 now = bpf_ktime_get_ns();
	struct cpu_budget *b = budget_window(now);
	if ((b ? b->used_ns : 0) + (now - s->ev.time_ns) <= cfg.walk_budget_ns)
		return 0;
	count(EHP_STAT_BUDGET_CUTS);
	return 1;
}

/* An event begun at started is done: its time, charged to its CPU's
 * window. */
EHP_INLINE __u32 event_done(__u64 started)
{
	__u64 now = bpf_ktime_get_ns();
	struct cpu_budget *b = cfg.walk_budget_ns ? budget_window(now) : 0;
	if (b)
		b->used_ns += now - started;
	return (__u32)(now - started);
}

/* A bpf_loop walk's look at the clock before its step'th step: stops w
 * once the budget is spent. */
EHP_INLINE int walk_out_of_time(struct walk *w, __u32 step)
{
	if ((step & (EHP_BUDGET_EVERY - 1)) != EHP_BUDGET_EVERY - 1 || !walk_budget_spent(w->s))
		return 0;
	w->stop = EHP_STOP_TIME_BUDGET;
	return 1;
}

/* v = min(v, max) in one register the verifier bounds. A clamp in C can
 * be compiled to a spill of v before the compare and a reload after it,
 * and a 6.1 verifier does not carry the compare's bound to the spilled
 * copy: it then sees the unclamped range (the arm64 object on Debian 12's
 * arm64 kernel: a 4096-byte read into the 2048-byte window, refused). */
#ifdef __bpf__
#define EHP_CLAMP_UMAX(v, max)                                                                    \
	asm volatile("if %0 <= %[m] goto +1\n%0 = %[m]\n" : "+r"(v) : [m] "i"(max))
#else
#define EHP_CLAMP_UMAX(v, max) ((v) = (v) > (max) ? (max) : (v))
#endif

/* A user-stack word: from the window when it holds it, else by reading a
 * new window from addr up to STACK_WINDOW bytes but never past addr's page
 * end (a page that is mapped for the word is mapped for the rest of it). */
EHP_INLINE int read_stack_u64(struct scratch *s, __u64 addr, __u64 *out)
{
	__u64 off = addr - s->win_lo;
	if (addr >= s->win_lo && off <= STACK_WINDOW - 8 && off + 8 <= s->win_len) {
		__builtin_memcpy(out, &s->win[off], 8);
		return 1;
	}
	__u64 len = PAGE_SIZE_BYTES - (addr & (PAGE_SIZE_BYTES - 1));
	EHP_CLAMP_UMAX(len, STACK_WINDOW);
	if (len >= 8 && bpf_probe_read_user(s->win, len, (void *)addr) == 0) {
		s->win_lo = addr;
		s->win_len = len;
		__builtin_memcpy(out, &s->win[0], 8);
		return 1;
	}
	s->win_len = 0;
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr) == 0;
}

/* One frame-pointer step from the current state: the caller's pc, sp, bp. */
#include "bpf/v8.bpf.h"

EHP_INLINE int fp_step_state(struct walk *w, __u64 flags)
{
	struct scratch *s = w->s;
	__u64 bp = s->regs[EHP_REG_RBP], ra, next_bp;
	if (!(s->valid & REG_BIT(EHP_REG_RBP)) || bp == 0) {
		w->stop = EHP_STOP_FP_END;
		return 0;
	}
	/* A JavaScript frame's word follows the native frame of its pc. */
	__u64 js = w->v8 ? v8_frame(w->pid, bp) : 0;
	if (js && !push_frame(w, js))
		return 0;
	if ((s->valid & REG_BIT(EHP_REG_RSP)) && bp < s->regs[EHP_REG_RSP]) {
		w->stop = EHP_STOP_BAD_FRAME;
		return 0;
	}
	if (!read_stack_u64(s, bp, &next_bp) || !read_stack_u64(s, bp + 8, &ra)) {
		w->stop = EHP_STOP_READ_FAULT;
		return 0;
	}
	ra = ehp_strip_pac(ra);
	if (ra == 0) {
		w->stop = EHP_STOP_FP_END;
		return 0;
	}
	s->regs[EHP_REG_RSP] = bp + 16;
	s->regs[EHP_REG_RBP] = next_bp;
	s->valid = REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
	s->pc = ra;
	s->exact = 0;
	return push_frame(w, ra | flags);
}

static long fp_step(__u32 i, void *data)
{
	struct walk *w = data;
	if (walk_out_of_time(w, i))
		return 1;
	return fp_step_state(w, 0) ? 0 : 1;
}

/* Registers of the interrupted context, from the sigcontext the kernel
 * pushed for a signal handler: __restore_rt runs on the rt_sigframe with
 * its return address (pretcode) popped, so rsp points at its struct
 * ucontext. The layouts are the kernel's (vmlinux.h), fixed by the user
 * ABI. */
EHP_INLINE int signal_step(struct walk *w)
{
	struct scratch *s = w->s;
	/* In the scratch map, not on the stack: the struct is 256 bytes and
	 * the walk runs in a bpf_loop callback, whose stack counts with the
	 * program's against the 512-byte limit. */
	ehp_sigcontext *sc = &s->sig;
	if (!(s->valid & REG_BIT(EHP_REG_RSP)) ||
	    bpf_probe_read_user(sc, sizeof(*sc),
				(void *)(s->regs[EHP_REG_RSP] + EHP_SIGFRAME_MCONTEXT))) {
		w->stop = EHP_STOP_READ_FAULT;
		return 0;
	}
	EHP_LOAD_GPRS(s->regs, sc);
	s->valid = ALL_REGS;
	s->pc = EHP_SIG_PC(sc);
	s->exact = 1;
	if (s->pc == 0) {
		w->stop = EHP_STOP_BAD_FRAME;
		return 0;
	}
	return push_frame(w, s->pc | EHP_FRAME_EXACT);
}

/* The walker's register slot (EHP_REG_RSP, EHP_REG_RBP, ...), when known. */
EHP_INLINE int slot_value(struct scratch *s, __u32 slot, __u64 *out)
{
	if (slot > EHP_REG_RIP || !(s->valid & REG_BIT(slot)))
		return 0;
	*out = s->regs[slot];
	return 1;
}

/* A rule's DWARF register (arm64: x29 is 29, sp 31), when known. Slots
 * are not DWARF numbers on arm64: the walker's own reads of sp and the
 * frame register go through slot_value (through ehp_reg_slot, x86's rbp
 * number 6 is no arm64 register: after a frameless leaf's x29=same the
 * frame register was lost and the caller's x29-based CFA unsupported). */
EHP_INLINE int reg_value(struct scratch *s, __u32 reg, __u64 *out)
{
	return slot_value(s, ehp_reg_slot(reg), out);
}

/* The CFA of the frame at pc under rule: REG+N, *(REG+N)+M, or the PLT
 * expressions. Returns 0, or the stop reason. */
EHP_INLINE __u32 frame_cfa(struct scratch *s, struct ehp_rule *rule, __u64 pc, __u64 *cfa)
{
	__u64 base;
	__u8 kind = rule->cfa_kind;
	if (kind == EHP_CFA_REG || kind == EHP_CFA_DEREF) {
		if (!reg_value(s, rule->cfa_reg, &base))
			return EHP_STOP_UNSUPPORTED_RULE;
		*cfa = base + (__s64)rule->cfa_offset;
		if (kind == EHP_CFA_DEREF) {
			if (!read_stack_u64(s, *cfa, cfa))
				return EHP_STOP_READ_FAULT;
			*cfa += (__s64)rule->cfa_deref_add;
		}
		return 0;
	}
	if (kind == EHP_CFA_PLT_LIT11 || kind == EHP_CFA_PLT_LIT10) {
		if (!slot_value(s, EHP_REG_RSP, &base))
			return EHP_STOP_UNSUPPORTED_RULE;
		__u64 threshold = kind == EHP_CFA_PLT_LIT11 ? 11 : 10;
		*cfa = base + 8 + ((pc & 15) >= threshold ? 8 : 0);
		return 0;
	}
	return EHP_STOP_UNSUPPORTED_RULE;
}

/* What CFA_OFFSET save slots count from: the CFA, or in a rule's second
 * form (EHP_RULE_FLAG_SAVED_FROM_REG) the CFA rule's register. */
EHP_INLINE __u64 save_slots(struct ehp_rule *rule, __u64 cfa)
{
	return cfa - ((rule->flags & EHP_RULE_FLAG_SAVED_FROM_REG) ? (__s64)rule->cfa_offset : 0);
}

/* The caller's rbp under rule, given where its save slots count from (the
 * CFA but for save_slots' second form); whether it is known. */
EHP_INLINE int caller_rbp(struct scratch *s, struct ehp_rule *rule, __u64 cfa, __u64 *bp)
{
	__u64 base;
	switch (rule->rbp_kind) {
	case EHP_RULE_SAME:
		return slot_value(s, EHP_REG_RBP, bp);
	case EHP_RULE_CFA_OFFSET:
		return read_stack_u64(s, cfa + (__s64)rule->rbp_offset, bp);
	case EHP_RULE_DEREF:
		if (reg_value(s, rule->rbp_reg, &base))
			return read_stack_u64(s, base + (__s64)rule->rbp_offset, bp);
		return 0;
	default:
		return 0;
	}
}

/* The caller's rbx, in files whose rules track it (a CFA based on rbx:
 * ld.so's _dl_runtime_resolve while _dl_fixup runs); whether it is known.
 * Every other file's rules lose it: their frames may have changed it. */
EHP_INLINE int caller_rbx(struct scratch *s, struct ehp_rule *rule, __u64 slots, __u64 *bx)
{
	if (rule->flags & EHP_RULE_FLAG_RBX_SAME)
		return slot_value(s, EHP_REG_RBX, bx);
	if (rule->flags & EHP_RULE_FLAG_RBX_SAVED)
		return read_stack_u64(s, slots + (__s64)rule->cfa_deref_add, bx);
	return 0;
}

#include "bpf/fp_fallback.bpf.h"
#include "bpf/ruby_yjit.bpf.h"

#ifdef EHP_JVM_WALK
/* jvm_step's result (bpf/hotspot.bpf.h): 0, not a frame it knows (the
 * native step follows); JVM_STEPPED, s holds the caller (its pc to push);
 * else JVM_STOP | the stop reason (the low 8 bits, which the flags above
 * them must never overlap: a stop reason read as JVM_STEPPED pushes the
 * same pc again and again to the depth limit). */
#define JVM_STOP 0x100
#define JVM_STEPPED 0x200
#define JVM_PC_WORD 0x400 /* with JVM_STEPPED: a pc word follows the frame */
__noinline int jvm_step(__u32 at, __u32 room);
#endif

/* php_step's result (bpf/php.bpf.h): PHP_STEP_NATIVE, the step is the
 * native walk's alone; else PHP_ACT_* << 16 | (1 + the frames it added, 0
 * when it only took the VM's frame off). */
#define PHP_STEP_NATIVE 0
enum php_step_act {
	PHP_ACT_NEXT = 1,   /* the VM call has frames left: the next step goes on */
	PHP_ACT_FULL = 2,   /* a frame did not fit: the walk ends at its depth limit */
	PHP_ACT_NATIVE = 3, /* the VM call is done: its native step follows in this step */
};
__noinline int php_step(__u32 at, __u32 n);

/* One CFI step: from the current frame's rule to the caller's registers. */
EHP_INLINE int dwarf_step_state(struct walk *w)
{
	struct scratch *s = w->s;
	__u64 pc = s->pc;
	__u64 lookup = s->exact ? pc : pc - 1;
	/* PHP: the VM call's frames leaf-side of its native frame. */
	if (s->php_busy || (w->n && ((lookup >= s->php_vm[0] && lookup < s->php_vm[1]) ||
				     (lookup >= s->php_vm[2] && lookup < s->php_vm[3]) ||
				     (lookup >= s->php_vm[4] && lookup < s->php_vm[5]) ||
				     (lookup >= s->php_vm[6] && lookup < s->php_vm[7])))) {
		int r = php_step(w->base + w->n, w->n);
		if (r != PHP_STEP_NATIVE) {
			w->n = w->n + ((__u32)r & 0xffff) - 1;
			if ((__u32)r >> 16 == PHP_ACT_FULL) {
				w->stop = EHP_STOP_DEPTH_LIMIT;
				return 0;
			}
			if ((__u32)r >> 16 != PHP_ACT_NATIVE)
				return 1;
			pc = s->pc; /* JIT code steps as execute_ex */
			lookup = s->exact ? pc : pc - 1;
		}
	}
#ifdef EHP_JVM_WALK
	/* Java code: its frame (slot n - 1, pushed as an address) named and
	 * unwound by the JVM's own layout. */
	if (lookup >= s->jvm_code[0] && lookup < s->jvm_code[1] && w->n) {
		__u32 limit = cfg.max_frames < EHP_MAX_USER_FRAMES ? cfg.max_frames : EHP_MAX_USER_FRAMES;
		__u64 sp = s->regs[EHP_REG_RSP];
		int sp_known = (s->valid & REG_BIT(EHP_REG_RSP)) != 0;
		int r = jvm_step(w->base + w->n - 1, w->n < limit ? limit - w->n : 0);
		if (r & JVM_STOP) {
			w->stop = r & 0xff;
			return 0;
		}
		if (r & JVM_STEPPED) {
			/* Every caller's frame lies above its callee's: a step that
			 * does not move sp up (memory the process wrote to loop)
			 * ends the walk. */
			if (sp_known && s->regs[EHP_REG_RSP] <= sp) {
				w->stop = EHP_STOP_BAD_FRAME;
				return 0;
			}
			if (r & JVM_PC_WORD)
				w->n++;
			return push_frame(w, s->pc);
		}
	}
#endif
	struct ehp_mapping *m = w->last;
	if (!m || lookup < m->begin || lookup >= m->end)
		m = find_mapping(w->proc, lookup);
	w->last = m;
	if (!m) {
#ifndef EHP_COMPAT /* the tail-call build has no Ruby walk */
		if (rb_jit_unmapped(s)) /* bpf/ruby_yjit.bpf.h */
			return 1;
#endif
		notify(EHP_EVENT_UNKNOWN_PC, w->pid, s->ev.tid, lookup);
		if (in_new_jit_range(s, lookup)) /* bpf/fp_fallback.bpf.h */
			return fp_step_state(w, EHP_FRAME_FP);
		w->stop = EHP_STOP_NO_MAPPING;
		return 0;
	}
	if (m->flags & EHP_MAPPING_PENDING) {
		w->stop = EHP_STOP_NO_TABLE;
		return 0;
	}
	if (!(m->flags & EHP_MAPPING_HAS_TABLE)) {
		/* JIT code, anonymous memory, a file whose table is not built:
		 * frame pointers are all there is, but for Ruby's. */
#ifndef EHP_COMPAT
		if ((m->flags & EHP_MAPPING_ANON) && s->rb_jit != RB_JIT_NONE)
			return rb_jit_step(w); /* bpf/ruby_yjit.bpf.h */
#endif
		return fp_step_state(w, EHP_FRAME_FP);
	}
	struct ehp_rule *rule = find_rule(m->table_id, lookup - m->bias);
	if (!rule || rule->cfa_kind == EHP_CFA_NONE)
		return fp_fallback_step(w); /* bpf/fp_fallback.bpf.h */
	if (rule->flags & EHP_RULE_FLAG_SIGNAL)
		return signal_step(w);

	__u64 cfa, ra, bp = 0;
	int ra_in_reg = 0;
	__u32 stop = frame_cfa(s, rule, pc, &cfa);
	if (!stop && rule->ra_kind == EHP_RULE_UNDEFINED)
		stop = EHP_STOP_END_OF_STACK;
	else if (!stop && (ra_in_reg = ehp_ra_in_register(s->regs, s->valid, rule, &ra)))
		; /* arm64: still in x30 */
	else if (!stop && rule->ra_kind != EHP_RULE_CFA_OFFSET)
		stop = EHP_STOP_UNSUPPORTED_RULE;
	else if (!stop && !read_stack_u64(s, save_slots(rule, cfa) + (__s64)rule->ra_offset, &ra))
		stop = EHP_STOP_READ_FAULT;
	if (stop) {
		w->stop = stop;
		return 0;
	}
	ra = ehp_strip_pac(ra);
	int bp_valid = caller_rbp(s, rule, save_slots(rule, cfa), &bp);
	__u64 bx = 0;
	int bx_valid = caller_rbx(s, rule, save_slots(rule, cfa), &bx);

	__u64 sp = 0;
	/* The stack grows with every frame, except where a frameless arm64
	 * leaf's return address is still in x30 (cfa == sp). */
	if (slot_value(s, EHP_REG_RSP, &sp) && (cfa < sp || (cfa == sp && !ra_in_reg))) {
		w->stop = EHP_STOP_BAD_FRAME;
		return 0;
	}
	if (ra == 0) {
		w->stop = EHP_STOP_BAD_FRAME;
		return 0;
	}
	s->regs[EHP_REG_RSP] = cfa;
	s->regs[EHP_REG_RBP] = bp;
	s->regs[EHP_REG_RBX] = bx;
	s->valid = REG_BIT(EHP_REG_RSP) | (bp_valid ? REG_BIT(EHP_REG_RBP) : 0) |
		   (bx_valid ? REG_BIT(EHP_REG_RBX) : 0);
	s->pc = ra;
	s->exact = 0;
	return push_frame(w, ra);
}

static long dwarf_step(__u32 i, void *data)
{
	struct walk *w = data;
	return dwarf_step_state(w) ? 0 : 1;
}

#endif /* EHPROF_BPF_WALK_BPF_H_ */
