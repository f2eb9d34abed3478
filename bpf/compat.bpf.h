/* What differs between the two builds of profiler.bpf.c:
 *  - the bpf_loop build (profiler.bpf.o, kernels 5.17+): the walk is one
 *    bpf_loop, the task is bpf_get_current_task_btf's, its user registers
 *    bpf_task_pt_regs's;
 *  - the tail-call build (EHP_COMPAT, profiler_compat.bpf.o, kernels 5.10
 *    to 5.16): none of those three helpers; the walk is a chain of
 *    tail-called programs (bpf/tailwalk.bpf.h), the task is
 *    bpf_get_current_task's read with CO-RE, the user registers those the
 *    kernel saved at the top of the task's kernel stack.
 * User space loads one of them, chosen from the probed helpers
 * (agent/session/kernel_features.cc). Included by profiler.bpf.c before
 * the other headers; the bpf_loop build's code is what it always was. */
#ifndef EHPROF_BPF_COMPAT_BPF_H_
#define EHPROF_BPF_COMPAT_BPF_H_

#ifdef EHP_COMPAT
/* The current task as an untrusted pointer: fields through CO-RE reads. */
#define EHP_CURRENT_TASK() ((struct task_struct *)bpf_get_current_task())
#define EHP_TASK_FLAGS(t) BPF_CORE_READ((t), flags)
/* 5.10's verifier takes only scalars and the context as a global
 * function's arguments (pointers came in 5.12): the mapping search is
 * inlined into a global function that finds the entry itself
 * (bpf/lookup.bpf.h). */
#define EHP_SEARCH_FN static __always_inline
#define EHP_MAPPING_SLOT mapping_slot_inline
/* 5.10 has no atomic fetch-and-add (5.12): the add is atomic, the slot it
 * hands out is read before it, so two CPUs adding to one process at once
 * can both write one slot (the other mapping then waits for /proc). */
#define EHP_FETCH_ADD(p, v) ehp_fetch_add_compat((p), (v))
#define EHP_TASK_PT_REGS(t) ehp_task_pt_regs_compat(t)

EHP_INLINE __u32 ehp_fetch_add_compat(__u32 *p, __u32 v)
{
	__u32 old = *(volatile __u32 *)p;
	__sync_fetch_and_add(p, v); /* result unused: BPF_XADD, which 5.10 has */
	return old;
}

/* x86-64's kernel stack (THREAD_SIZE without KASAN) and the user registers
 * every entry from user mode saves at its top (struct pt_regs, 21 words). */
#define EHP_THREAD_SIZE 16384
#define EHP_PT_REGS_BYTES 168
#define EHP_PT_REGS_CS 136
#define EHP_PT_REGS_SS 160
#define EHP_USER_CS 0x33
#define EHP_USER32_CS 0x23
#define EHP_USER_DS 0x2b

/* Where bpf_task_pt_regs(task) would point: task->stack + THREAD_SIZE -
 * sizeof(struct pt_regs), below 16 bytes of padding on kernels built with
 * FRED (6.9+); the one whose cs and ss are user mode's. 0 when neither. */
EHP_INLINE __u64 ehp_task_pt_regs_compat(struct task_struct *task)
{
	__u64 top = (__u64)BPF_CORE_READ(task, stack) + EHP_THREAD_SIZE;
	if (top == EHP_THREAD_SIZE)
		return 0;
#pragma clang loop unroll(full)
	for (int pad = 0; pad <= 16; pad += 16) {
		__u64 at = top - pad - EHP_PT_REGS_BYTES, cs = 0, ss = 0;
		if (bpf_probe_read_kernel(&cs, sizeof(cs), (void *)(at + EHP_PT_REGS_CS)) ||
		    bpf_probe_read_kernel(&ss, sizeof(ss), (void *)(at + EHP_PT_REGS_SS)))
			return 0;
		cs &= 0xffff;
		if ((cs == EHP_USER_CS || cs == EHP_USER32_CS) && (ss & 0xffff) == EHP_USER_DS)
			return at;
	}
	return 0;
}

/* cgroup v2's ancestors up to 6.0 (then ancestors[], pointers). */
struct cgroup___pre61 {
	int level;
	__u64 ancestor_ids[];
} __attribute__((preserve_access_index));

/* bpf_get_current_ancestor_cgroup_id(level) where tracing programs lack it
 * (5.10): the id from the current task's cgroup's ancestor_ids. */
EHP_INLINE __u64 ehp_ancestor_cgroup_id_compat(int level)
{
	struct task_struct *task = EHP_CURRENT_TASK();
	struct cgroup___pre61 *cg = (void *)BPF_CORE_READ(task, cgroups, dfl_cgrp);
	if (!bpf_core_field_exists(cg->ancestor_ids))
		return bpf_get_current_ancestor_cgroup_id(level);
	__u64 id = 0;
	if (level < 0 || level > BPF_CORE_READ(cg, level))
		return 0;
	bpf_probe_read_kernel(&id, sizeof(id),
			      (__u8 *)cg + bpf_core_field_offset(cg->ancestor_ids) + (__u64)level * 8);
	return id;
}
#define EHP_ANCESTOR_CGROUP_ID(level) ehp_ancestor_cgroup_id_compat(level)
#else
#define EHP_ANCESTOR_CGROUP_ID(level) bpf_get_current_ancestor_cgroup_id(level)
#define EHP_CURRENT_TASK() bpf_get_current_task_btf()
#define EHP_TASK_FLAGS(t) ((t)->flags)
#define EHP_SEARCH_FN __noinline
#define EHP_MAPPING_SLOT mapping_slot
#define EHP_FETCH_ADD(p, v) __sync_fetch_and_add((p), (v))
#define EHP_TASK_PT_REGS(t) bpf_task_pt_regs(t)
#endif

#endif /* EHPROF_BPF_COMPAT_BPF_H_ */
