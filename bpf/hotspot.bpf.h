/* HotSpot's Java frames inside the native walk, with no frame pointers and
 * no perf map: when the walk's pc is in the code cache of a JVM in
 * jvm_procs, jvm_step finds the code blob at pc through the heap's segment
 * map (HotSpot's CodeHeap::find_block_for), replaces the frame's address
 * in the sample with a Java frame (EHP_FRAME_JVM: the Method* and, when
 * interpreted, the bci) and unwinds it as HotSpot does: a compiled method
 * or a stub by its frame size, the interpreter by its frame pointer, whose
 * frames HotSpot always links. The caller's pc is then the walk's again
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

/* The sampled process's entry, copied once per sample: jvm_step, a global
 * function verified on its own, reads it from here. */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ehp_jvm_proc);
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
	struct ehp_jvm_proc *buf = bpf_map_lookup_elem(&jvm_buf, &zero);
	if (!proc || !buf)
		return;
	*buf = *proc;
	s->jvm_code[0] = buf->code_lo;
	s->jvm_code[1] = buf->code_hi;
}

EHP_INLINE int jvm_read(__u64 addr, void *out, __u32 size)
{
	return bpf_probe_read_user(out, size, (void *)addr) == 0;
}

/* The blob whose code holds pc (a lookup address), or 0. */
EHP_INLINE __u64 jvm_find_blob(const struct ehp_jvm_proc *p, __u64 pc)
{
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
		__u8 tag;
		if (!jvm_read(segmap + seg, &tag, 1) || tag == 0xff)
			return 0;
		if (tag == 0)
			return low + (seg << p->log2_segment) + p->heap_block;
		if (tag > seg)
			return 0;
		seg -= tag;
	}
	return 0;
}

/* An interpreted frame at s: its method and bci from the frame's slots
 * (the top frame's bcp from r13, where the interpreter keeps it), the
 * caller from the frame pointer. */
EHP_INLINE __u32 jvm_interpreted(struct scratch *s, const struct ehp_jvm_proc *p, __u64 *value)
{
	__u64 fp = s->regs[EHP_REG_RBP], method = 0, bcp = 0, cm = 0, ra, next_fp, sender_sp;
	if (!(s->valid & REG_BIT(EHP_REG_RBP)) || !fp ||
	    ((s->valid & REG_BIT(EHP_REG_RSP)) && fp < s->regs[EHP_REG_RSP]))
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	if (!jvm_read(fp, &next_fp, 8) || !jvm_read(fp + 8, &ra, 8) ||
	    !jvm_read(fp - p->interp_sender_sp, &sender_sp, 8))
		return JVM_STOP | EHP_STOP_READ_FAULT;
	__u32 bci = EHP_JVM_BCI_UNKNOWN;
	if (jvm_read(fp - p->interp_method, &method, 8) && method &&
	    jvm_read(method + p->method_const, &cm, 8) && cm) {
		if (s->exact && (s->valid & REG_BIT(13)))
			bcp = s->regs[13];
		else if (!jvm_read(fp - p->interp_bcp, &bcp, 8))
			bcp = 0;
		__u64 code = cm + p->const_method_size;
		if (bcp >= code && bcp - code < EHP_JVM_BCI_UNKNOWN)
			bci = (__u32)(bcp - code);
		*value = EHP_JVM_FRAME(method, bci, 0);
	} else {
		*value = EHP_JVM_FRAME(0, EHP_JVM_BLOB_INTERPRETER, 0);
	}
	if (!ra)
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	/* The caller's sp as a compiled caller counts its frame from: the one
	 * before the interpreter extended the stack for its locals. */
	s->regs[EHP_REG_RSP] = sender_sp ? sender_sp : fp + 16;
	s->regs[EHP_REG_RBP] = next_fp;
	s->valid = REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
	s->pc = ra;
	return JVM_STEPPED;
}

/* A frame of frame_size words at s (a compiled method, a stub): the
 * return address is its last word, the caller's rbp the one below. In a
 * top frame still in its prologue (pc before frame_complete) or in a
 * frameless stub, the return address is at sp. */
EHP_INLINE __u32 jvm_sized(struct scratch *s, __s32 frame_size, int prologue)
{
	__u64 sp = s->regs[EHP_REG_RSP], ra, bp = 0;
	if (!(s->valid & REG_BIT(EHP_REG_RSP)))
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	if (prologue || frame_size <= 0) {
		if (!jvm_read(sp, &ra, 8))
			return JVM_STOP | EHP_STOP_READ_FAULT;
		s->regs[EHP_REG_RSP] = sp + 8;
		s->valid &= REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
	} else {
		if (frame_size > (1 << 20))
			return JVM_STOP | EHP_STOP_BAD_FRAME;
		__u64 cfa = sp + (__u64)frame_size * 8;
		if (!jvm_read(cfa - 8, &ra, 8) || !jvm_read(cfa - 16, &bp, 8))
			return JVM_STOP | EHP_STOP_READ_FAULT;
		s->regs[EHP_REG_RSP] = cfa;
		s->regs[EHP_REG_RBP] = bp;
		s->valid = REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
	}
	if (!ra)
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	s->pc = ra;
	return JVM_STEPPED;
}

/* A stub without a frame size: a frame-pointer frame when rbp points just
 * above sp (the call stub, stubs that enter()), else frameless. */
EHP_INLINE __u32 jvm_stub(struct scratch *s, __s32 frame_size)
{
	__u64 sp = s->regs[EHP_REG_RSP], fp = s->regs[EHP_REG_RBP];
	int has_fp = (s->valid & REG_BIT(EHP_REG_RBP)) && (s->valid & REG_BIT(EHP_REG_RSP)) && fp >= sp &&
		     fp - sp < 65536;
	if (frame_size > 0 || (s->exact && !has_fp))
		return jvm_sized(s, frame_size, 0);
	if (!has_fp)
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	__u64 ra, next_fp;
	if (!jvm_read(fp, &next_fp, 8) || !jvm_read(fp + 8, &ra, 8))
		return JVM_STOP | EHP_STOP_READ_FAULT;
	if (!ra)
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	s->regs[EHP_REG_RSP] = fp + 16;
	s->regs[EHP_REG_RBP] = next_fp;
	s->valid = REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
	s->pc = ra;
	return JVM_STEPPED;
}

/* One step of the walk at a pc in the JVM's code cache (s->jvm_code): the
 * frame in slot at becomes a Java frame, a compiled one followed by its pc
 * word in slot at + 1 when room (slots free after at) is 2 or more; s then
 * holds its caller. See JVM_STEPPED. */
__noinline int jvm_step(__u32 at, __u32 room)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	struct ehp_jvm_proc *p = bpf_map_lookup_elem(&jvm_buf, &zero);
	if (!s || !p || at >= EHP_MAX_EVENT_FRAMES)
		return 0;
	__u64 slot = at;
	EHP_CLAMP_UMAX(slot, EHP_MAX_EVENT_FRAMES - 1);
	__u64 pc = s->exact ? s->pc : s->pc - 1;
	__u64 blob = jvm_find_blob(p, pc), name_ptr = 0, name = 0, value, code_begin = 0;
	if (!blob) {
		s->frames[slot] = EHP_JVM_FRAME(0, EHP_JVM_BLOB_UNKNOWN, 0);
		return JVM_STOP | EHP_STOP_BAD_FRAME;
	}
	__s32 frame_size = 0, complete = 0, code_off = 0;
	if (!jvm_read(blob + p->blob_name, &name_ptr, 8) || !jvm_read(name_ptr, &name, 8) ||
	    !jvm_read(blob + p->blob_frame_size, &frame_size, 4) ||
	    !jvm_read(blob + p->blob_frame_complete, &complete, 4))
		return JVM_STOP | EHP_STOP_READ_FAULT;
	if (p->blob_frame_complete_i16)
		complete = (__s16)complete;
	if (p->code_begin_is_offset) {
		if (!jvm_read(blob + p->blob_code_begin, &code_off, 4))
			return JVM_STOP | EHP_STOP_READ_FAULT;
		code_begin = blob + code_off;
	} else if (!jvm_read(blob + p->blob_code_begin, &code_begin, 8)) {
		return JVM_STOP | EHP_STOP_READ_FAULT;
	}
	__u32 r;
	if (name == JVM_NAME_INTERP) {
		r = jvm_interpreted(s, p, &value);
	} else if (name == JVM_NAME_NMETHOD || name == JVM_NAME_NATIVE) {
		__u64 method = 0;
		if (!jvm_read(blob + p->nmethod_method, &method, 8))
			method = 0;
		value = method ? EHP_JVM_FRAME(method, 0, 1) : EHP_JVM_FRAME(0, EHP_JVM_BLOB_STUB, 0);
		__u64 ran_at = s->pc;
		r = jvm_sized(s, frame_size, s->exact && pc < code_begin + complete);
		if (method && r == JVM_STEPPED && room >= 2 && slot + 1 < EHP_MAX_EVENT_FRAMES) {
			__u64 next = slot + 1;
			EHP_CLAMP_UMAX(next, EHP_MAX_EVENT_FRAMES - 1);
			s->frames[next] = EHP_JVM_PC_WORD(ran_at);
			r |= JVM_PC_WORD;
		}
	} else {
		value = EHP_JVM_FRAME(0, EHP_JVM_BLOB_STUB, 0);
		r = jvm_stub(s, frame_size);
	}
	s->frames[slot] = value;
	s->exact = 0;
	return r;
}

#endif /* EHP_JVM_WALK */

#endif /* EHPROF_BPF_HOTSPOT_BPF_H_ */
