/* HotSpot's Java frames inside the native walk, with no frame pointers and
 * no perf map: when the walk's pc is in the code cache of a JVM in
 * jvm_procs, jvm_step finds the code blob at pc through the heap's segment
 * map (HotSpot's CodeHeap::find_block_for), replaces the frame's address
 * in the sample with a Java frame (EHP_FRAME_JVM: the Method* and, when
 * interpreted, the bci) and unwinds it as HotSpot does: a compiled method
 * or a stub by its frame size (a compiled method interrupted in its
 * prologue or epilogue by as much of the frame as its instructions there
 * had built), the interpreter by its frame pointer, whose frames HotSpot
 * always links. The caller's pc is then the walk's again
 * (CFI for libjvm and the rest, jvm_step for more Java). The offsets come
 * per JVM from its own gHotSpotVMStructs (agent/jvm/); x86-64 only, and
 * only in the bpf_loop build (EHP_JVM_WALK). Included after
 * bpf/walk.bpf.h. */
#ifndef EHPROF_BPF_HOTSPOT_BPF_H_
#define EHPROF_BPF_HOTSPOT_BPF_H_

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EHP_JVM_PROCS);
	__type(key, __u32);
	__type(value, struct ehp_jvm_proc);
} jvm_procs SEC(".maps");

/* The sampled process's entry, copied once per sample, and the words
 * jvm_step reads: jvm_step, a global function verified on its own, keeps
 * them here, not on its stack (6.1 gives the sampler, the bpf_loop
 * callback and jvm_step 512 bytes together). */
struct jvm_state {
	struct ehp_jvm_proc proc;
	__u64 name_ptr, name, code_begin, method;
	__u64 next_fp, ra, sender_sp, bcp, cm;
	__s32 frame_size, complete, code_off;
	__u8 tag;
	__u8 pad[3];
	__u8 insn[16]; /* the code around a leaf pc (bpf/hotspot_leaf.bpf.h) */
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct jvm_state);
} jvm_buf SEC(".maps");

/* The maps are in every build (one skeleton opens them all); the walk only
 * where EHP_JVM_WALK is defined. */
#ifdef EHP_JVM_WALK

/* The first 8 bytes of a blob's name, as a little-endian u64: what kind
 * of code it is (HotSpot names every nmethod "nmethod", a JNI wrapper
 * "native nmethod", the template interpreter's blob "Interpreter"). */
#define JVM_NAME_NMETHOD 0x00646f6874656d6eull	/* "nmethod\0" */
#define JVM_NAME_NATIVE 0x6e2065766974616eull	/* "native n" */
#define JVM_NAME_INTERP 0x6572707265746e49ull	/* "Interpre" */

/* Starts the Java side of a walk of process pid: its code cache's hull in
 * s->jvm_code, or zeros when pid runs no JVM the walk knows. */
EHP_INLINE void jvm_begin(struct scratch *s, __u32 pid)
{
	__u32 zero = 0;
	s->jvm_code[0] = s->jvm_code[1] = 0;
	struct ehp_jvm_proc *proc = bpf_map_lookup_elem(&jvm_procs, &pid);
	struct jvm_state *buf = bpf_map_lookup_elem(&jvm_buf, &zero);
	if (!proc || !buf)
		return;
	buf->proc = *proc;
	s->jvm_code[0] = proc->code_lo;
	s->jvm_code[1] = proc->code_hi;
}

EHP_INLINE int jvm_read(__u64 addr, void *out, __u32 size)
{
	return bpf_probe_read_user(out, size, (void *)addr) == 0;
}

/* The blob whose code holds pc (a lookup address), or 0. */
EHP_INLINE __u64 jvm_find_blob(struct jvm_state *st, __u64 pc)
{
	const struct ehp_jvm_proc *p = &st->proc;
	__u64 low = 0, segmap = 0;
	for (int i = 0; i < EHP_JVM_HEAPS; i++) {
		if (i < p->nheaps && pc >= p->heaps[i].low && pc < p->heaps[i].high) {
			low = p->heaps[i].low;
			segmap = p->heaps[i].segmap;
		}
	}
	if (!low || p->log2_segment > 20)
		return 0;
	__u64 seg = (pc - low) >> p->log2_segment;
	for (int hop = 0; hop < EHP_JVM_SEGMAP_HOPS; hop++) {
		if (!jvm_read(segmap + seg, &st->tag, 1) || st->tag == 0xff)
			return 0;
		if (st->tag == 0)
			return low + (seg << p->log2_segment) + p->heap_block;
		if (st->tag > seg)
			return 0;
		seg -= st->tag;
	}
	return 0;
}

/* An interpreted frame at s: its method and bci from the frame's slots
 * (the top frame's bcp from r13, where the interpreter keeps it), the
 * caller from the frame pointer. */
EHP_INLINE __u32 jvm_interpreted(struct scratch *s, struct jvm_state *st, __u64 *value)
{
	const struct ehp_jvm_proc *p = &st->proc;
	__u64 fp = s->regs[EHP_REG_RBP];
	if (!(s->valid & REG_BIT(EHP_REG_RBP)) || !fp ||
	    ((s->valid & REG_BIT(EHP_REG_RSP)) && fp < s->regs[EHP_REG_RSP]))
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	if (!jvm_read(fp, &st->next_fp, 8) || !jvm_read(fp + 8, &st->ra, 8) ||
	    !jvm_read(fp - p->interp_sender_sp, &st->sender_sp, 8))
		return JVM_STOP | EHP_STOP_READ_FAULT;
	__u32 bci = EHP_JVM_BCI_UNKNOWN;
	st->method = st->cm = 0;
	if (jvm_read(fp - p->interp_method, &st->method, 8) && st->method &&
	    jvm_read(st->method + p->method_const, &st->cm, 8) && st->cm) {
		if (s->exact && (s->valid & REG_BIT(13)))
			st->bcp = s->regs[13];
		else if (!jvm_read(fp - p->interp_bcp, &st->bcp, 8))
			st->bcp = 0;
		__u64 code = st->cm + p->const_method_size;
		if (st->bcp >= code && st->bcp - code < EHP_JVM_BCI_UNKNOWN)
			bci = (__u32)(st->bcp - code);
		*value = EHP_JVM_FRAME(st->method, bci, 0);
	} else {
		*value = EHP_JVM_FRAME(0, EHP_JVM_BLOB_INTERPRETER, 0);
	}
	if (!st->ra)
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	/* The caller's sp as a compiled caller counts its frame from: the one
	 * before the interpreter extended the stack for its locals. */
	s->regs[EHP_REG_RSP] = st->sender_sp ? st->sender_sp : fp + 16;
	s->regs[EHP_REG_RBP] = st->next_fp;
	s->valid = REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
	s->pc = st->ra;
	return JVM_STEPPED;
}

#include "bpf/hotspot_leaf.bpf.h"

/* A frame of frame_size words at s (a compiled method, a stub): the
 * return address is its last word, the caller's rbp the one below; a leaf
 * in its prologue or epilogue holds less of it (layout, see
 * bpf/hotspot_leaf.bpf.h), and in a frameless stub the return address is
 * at sp. */
EHP_INLINE __u32 jvm_sized(struct scratch *s, struct jvm_state *st, __s32 frame_size, __u32 layout)
{
	__u64 sp = s->regs[EHP_REG_RSP];
	if (!(s->valid & REG_BIT(EHP_REG_RSP)))
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	if (layout == JVM_RA_AT_SP || frame_size <= 0) {
		if (!jvm_read(sp, &st->ra, 8))
			return JVM_STOP | EHP_STOP_READ_FAULT;
		s->regs[EHP_REG_RSP] = sp + 8;
		s->valid &= REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
	} else if (layout == JVM_PUSHED || layout == JVM_POPPING) {
		if (!jvm_read(sp + 8, &st->ra, 8) || !jvm_read(sp, &st->next_fp, 8))
			return JVM_STOP | EHP_STOP_READ_FAULT;
		s->regs[EHP_REG_RSP] = sp + 16;
		s->regs[EHP_REG_RBP] = st->next_fp;
		s->valid = REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
	} else {
		if (frame_size > (1 << 20))
			return JVM_STOP | EHP_STOP_BAD_FRAME;
		__u64 cfa = sp + (__u64)frame_size * 8;
		if (!jvm_read(cfa - 8, &st->ra, 8) || !jvm_read(cfa - 16, &st->next_fp, 8))
			return JVM_STOP | EHP_STOP_READ_FAULT;
		if (layout == JVM_RBP_LIVE)
			st->next_fp = s->regs[EHP_REG_RBP];
		s->regs[EHP_REG_RSP] = cfa;
		s->regs[EHP_REG_RBP] = st->next_fp;
		s->valid = REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
	}
	if (!st->ra)
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	s->pc = st->ra;
	return JVM_STEPPED;
}

/* A stub without a frame size: a frame-pointer frame when rbp points just
 * above sp (the call stub, stubs that enter()), else frameless. The
 * method entry barrier's stub (called from a compiled method's
 * prologue where the GC arms nmethods: Temurin 25 with G1, not JDK 17)
 * pushes -1 before it enter()s, a word it overwrites when it
 * deoptimizes the caller: its return address is one word further up. */
EHP_INLINE __u32 jvm_stub(struct scratch *s, struct jvm_state *st, __s32 frame_size)
{
	__u64 sp = s->regs[EHP_REG_RSP], fp = s->regs[EHP_REG_RBP];
	int has_fp = (s->valid & REG_BIT(EHP_REG_RBP)) && (s->valid & REG_BIT(EHP_REG_RSP)) && fp >= sp &&
		     fp - sp < 65536;
	if (frame_size > 0 || (s->exact && !has_fp))
		return jvm_sized(s, st, frame_size, JVM_FRAMED);
	if (!has_fp)
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	if (!jvm_read(fp, &st->next_fp, 8) || !jvm_read(fp + 8, &st->ra, 8))
		return JVM_STOP | EHP_STOP_READ_FAULT;
	if (st->ra == ~0ull) {
		fp += 8;
		if (!jvm_read(fp + 8, &st->ra, 8))
			return JVM_STOP | EHP_STOP_READ_FAULT;
	}
	if (!st->ra)
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	s->regs[EHP_REG_RSP] = fp + 16;
	s->regs[EHP_REG_RBP] = st->next_fp;
	s->valid = REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
	s->pc = st->ra;
	return JVM_STEPPED;
}

/* s->frames[slot] = v, the slot bounded where it is used: a bound taken
 * before the calls above does not survive 6.12's verifier (a spilled
 * slot comes back with its signed range only). */
EHP_INLINE void jvm_put(struct scratch *s, __u64 slot, __u64 v)
{
	EHP_CLAMP_UMAX(slot, EHP_MAX_EVENT_FRAMES - 1);
	s->frames[slot] = v;
}

/* One step of the walk at a pc in the JVM's code cache (s->jvm_code): the
 * frame in slot at becomes a Java frame, a compiled one followed by its pc
 * word in slot at + 1 when room (slots free after at) is 2 or more; s then
 * holds its caller. See JVM_STEPPED. */
__noinline int jvm_step(__u32 at, __u32 room)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	struct jvm_state *st = bpf_map_lookup_elem(&jvm_buf, &zero);
	/* at + 1 too is a slot (the pc word's). */
	if (!s || !st || at >= EHP_MAX_EVENT_FRAMES - 1)
		return 0;
	__u64 slot = at;
	const struct ehp_jvm_proc *p = &st->proc;
	__u64 pc = s->exact ? s->pc : s->pc - 1, value;
	__u64 blob = jvm_find_blob(st, pc);
	if (!blob) {
		jvm_put(s, slot, EHP_JVM_FRAME(0, EHP_JVM_BLOB_UNKNOWN, 0));
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	}
	if (!jvm_read(blob + p->blob_name, &st->name_ptr, 8) || !jvm_read(st->name_ptr, &st->name, 8) ||
	    !jvm_read(blob + p->blob_frame_size, &st->frame_size, 4) ||
	    !jvm_read(blob + p->blob_frame_complete, &st->complete, 4))
		return JVM_STOP | EHP_STOP_READ_FAULT;
	if (p->blob_frame_complete_i16)
		st->complete = (__s16)st->complete;
	if (p->code_begin_is_offset) {
		if (!jvm_read(blob + p->blob_code_begin, &st->code_off, 4))
			return JVM_STOP | EHP_STOP_READ_FAULT;
		st->code_begin = blob + st->code_off;
	} else if (!jvm_read(blob + p->blob_code_begin, &st->code_begin, 8)) {
		return JVM_STOP | EHP_STOP_READ_FAULT;
	}
	__u32 r;
	if (st->name == JVM_NAME_INTERP) {
		r = jvm_interpreted(s, st, &value);
	} else if (st->name == JVM_NAME_NMETHOD || st->name == JVM_NAME_NATIVE) {
		if (!jvm_read(blob + p->nmethod_method, &st->method, 8))
			st->method = 0;
		value = st->method ? EHP_JVM_FRAME(st->method, 0, 1) : EHP_JVM_FRAME(0, EHP_JVM_BLOB_STUB, 0);
		__u64 ran_at = s->pc;
		int exact = s->exact, prologue = exact && pc < st->code_begin + st->complete;
		__u32 layout = exact ? jvm_leaf_layout(s, st, pc, prologue) : JVM_FRAMED;
		r = jvm_sized(s, st, st->frame_size, layout);
		/* In its prologue or epilogue a frame runs its own method, no
		 * inlined one yet or any more: no pc word, so no scopes (as
		 * AsyncGetCallTrace, which finds no PcDesc there, names it). */
		if (st->method && r == JVM_STEPPED && room >= 2 && !prologue &&
		    (layout == JVM_FRAMED || layout == JVM_RBP_LIVE)) {
			jvm_put(s, slot + 1, EHP_JVM_PC_WORD(ran_at, exact));
			r |= JVM_PC_WORD;
		}
	} else {
		value = EHP_JVM_FRAME(0, EHP_JVM_BLOB_STUB, 0);
		r = jvm_stub(s, st, st->frame_size);
	}
	jvm_put(s, slot, value);
	s->exact = 0;
	return r;
}

#endif /* EHP_JVM_WALK */

#endif /* EHPROF_BPF_HOTSPOT_BPF_H_ */
