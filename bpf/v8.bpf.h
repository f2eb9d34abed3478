/* JavaScript frames of V8 processes (node) inside the native walk: V8
 * keeps a frame pointer in every JavaScript frame, and the walk steps
 * through JIT code (anonymous memory) and the embedded builtins (node's
 * text without CFI rows) by frame pointer (fp_step_state). Before such a
 * step, for a process in v8_procs, v8_frame looks at the frame's fixed
 * slots: a Smi in the marker slot is a typed frame (entry, exit, stub: no
 * function); else the function slot must hold a JSFunction whose shared
 * field is a SharedFunctionInfo (checked by its map's instance type), and
 * the frame's word (EHP_V8_FRAME) names that SharedFunctionInfo, with the
 * bytecode offset when the frame is an interpreted one (a BytecodeArray in
 * its slot). Offsets come per V8 binary from user space (agent/v8/).
 * Included by bpf/walk.bpf.h before fp_step_state. */
#ifndef EHPROF_BPF_V8_BPF_H_
#define EHPROF_BPF_V8_BPF_H_

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EHP_V8_PROCS);
	__type(key, __u32);
	__type(value, struct ehp_v8_proc);
} v8_procs SEC(".maps");

/* Whether the walk of process pid looks for JavaScript frames. */
EHP_INLINE __u8 v8_begin(__u32 pid)
{
	return bpf_map_lookup_elem(&v8_procs, &pid) != 0;
}

EHP_INLINE int v8_read(__u64 addr, __u64 *out)
{
	return bpf_probe_read_user(out, sizeof(*out), (void *)addr) == 0;
}

/* The instance type of the heap object at tagged pointer obj; 0 when it is
 * not a tagged pointer or cannot be read. */
EHP_INLINE __u16 v8_type(const struct ehp_v8_proc *p, __u64 obj)
{
	__u64 map = 0;
	__u16 type = 0;
	if ((obj & p->heap_object_tag_mask) != p->heap_object_tag ||
	    !v8_read(obj - p->heap_object_tag + p->off_map, &map) ||
	    (map & p->heap_object_tag_mask) != p->heap_object_tag ||
	    bpf_probe_read_user(&type, sizeof(type), (void *)(map - p->heap_object_tag + p->off_instance_type)))
		return 0;
	return type;
}

/* The bytecode offset field of an interpreted frame at fp, else
 * EHP_V8_OFFSET_UNKNOWN (compiled code keeps other values in those slots). */
EHP_INLINE __u32 v8_bytecode_offset(const struct ehp_v8_proc *p, __u64 fp)
{
	__u64 array = 0, smi = 0;
	if (!v8_read(fp + p->off_fp_bytecode_array, &array) ||
	    v8_type(p, array) != p->type_bytecode_array ||
	    !v8_read(fp + p->off_fp_bytecode_offset, &smi) || (smi & p->heap_object_tag_mask) ||
	    p->smi_shift > 63)
		return EHP_V8_OFFSET_UNKNOWN;
	__s64 v = (__s64)smi >> p->smi_shift;
	return v >= 0 && v < EHP_V8_OFFSET_UNKNOWN ? (__u32)v : EHP_V8_OFFSET_UNKNOWN;
}

/* The frame word of the JavaScript frame whose frame pointer is fp in
 * process pid, 0 when fp's frame is not one. A global function: verified
 * once, not at each of the walk's steps. */
__noinline __u64 v8_frame(__u32 pid, __u64 fp)
{
	struct ehp_v8_proc *p = bpf_map_lookup_elem(&v8_procs, &pid);
	__u64 marker = 0, fn = 0, sfi = 0;
	if (!p || !fp || !v8_read(fp + p->off_fp_marker, &marker) ||
	    (marker & p->heap_object_tag_mask) != p->heap_object_tag ||
	    !v8_read(fp + p->off_fp_function, &fn) ||
	    (fn & p->heap_object_tag_mask) != p->heap_object_tag ||
	    !v8_read(fn - p->heap_object_tag + p->off_function_shared, &sfi) ||
	    v8_type(p, sfi) != p->type_shared_info)
		return 0;
	return EHP_V8_FRAME(sfi - p->heap_object_tag, v8_bytecode_offset(p, fp));
}

#endif /* EHPROF_BPF_V8_BPF_H_ */
