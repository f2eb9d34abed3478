/* The BPF user-stack walk run in user space: bpf/stacks.bpf.h's
 * collect_stacks and everything under it (bpf/walk.bpf.h, bpf/lookup.bpf.h,
 * bpf/compact_lookup.h, bpf/fp_fallback.bpf.h, bpf/python.bpf.h), compiled
 * as C with bpf/host/bpf_shim.h for the helpers: bpf_probe_read_user
 * reads a captured stack, map lookups go to in-memory maps (host_maps.h). The
 * same source as the BPF object, so a walk can be stepped in gdb and
 * unit-tested without root. A C API, callable from C++. */
#ifndef EHPROF_BPF_HOST_WALK_REPLAY_H_
#define EHPROF_BPF_HOST_WALK_REPLAY_H_

#include "bpf/ehprof_abi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The maps the walk reads, as the replay serves them. */
enum ehp_replay_map {
	EHP_REPLAY_MAP_PROCS = 0, /* pid -> struct ehp_proc */
	EHP_REPLAY_MAP_TABLES,	  /* table id -> struct ehp_table_info */
	EHP_REPLAY_MAP_PAGES,	  /* -> struct ehp_page */
	EHP_REPLAY_MAP_BUCKETS,	  /* -> struct ehp_buckets */
	EHP_REPLAY_MAP_ROWS,	  /* row chunk -> EHP_ROW_CHUNK_ROWS packed rows */
	EHP_REPLAY_MAP_PALETTES,  /* -> u64 of rule ids */
	EHP_REPLAY_MAP_RULES,	  /* -> struct ehp_rule */
	EHP_REPLAY_MAP_COUNT,
};

/* What one replayed walk reads. Not shared between threads while a walk
 * runs (the helpers reach it through a thread-local pointer). */
struct ehp_replay_env {
	/* The value at key in map, or 0 (an absent key, as a BPF map has). */
	void *(*lookup)(void *ctx, enum ehp_replay_map map, ehp_u32 key);
	void *ctx;
	/* The user memory the walk may read: the captured stack, from
	 * stack_lo (the leaf's sp). A read outside it fails, as a read of
	 * unmapped memory fails in the kernel. */
	const ehp_u8 *stack;
	ehp_u64 stack_lo;
	ehp_u64 stack_len;
	/* Out: the highest address + 1 any successful read reached. */
	ehp_u64 read_end;
};

struct ehp_replay_result {
	ehp_u64 frames[EHP_MAX_USER_FRAMES]; /* with EHP_FRAME_* bits, leaf first */
	ehp_u32 n;
	ehp_u32 stop_reason; /* enum ehp_stop_reason */
};

/* Walks the stack of pid from the leaf registers regs (x86-64 DWARF
 * numbering); exact: the leaf pc is an interrupted one (a sample in user
 * mode or an interrupt), not a syscall's return. 0, or -1 when out of
 * memory. */
int ehp_replay_walk(struct ehp_replay_env *env, const ehp_u64 regs[EHP_REG_RIP + 1], int exact,
		    ehp_u32 pid, struct ehp_replay_result *out);

/* The walk of pid continued from where the kernel's stopped (a deferred
 * sample, bpf/deferred.bpf.h): at's registers, pc and validity, its
 * n_user frames counted against the depth limit; env's stack the copy
 * from at->regs[EHP_REG_RSP]. out gets the frames after the kernel's (the
 * stopped frame itself is the kernel's last) and the walk's stop reason.
 * Native frames only: the runtimes' maps are empty in the replay. 0, or
 * -1 when out of memory. */
int ehp_replay_walk_on(struct ehp_replay_env *env, const struct ehp_deferred *at, ehp_u32 pid,
		       struct ehp_replay_result *out);

/* bpf/lookup.bpf.h's find_rule over env's maps (only lookup and ctx are
 * read): the rule of table table_id for ELF address addr copied into *out,
 * 1; 0 when the maps hold none. */
int ehp_replay_find_rule(struct ehp_replay_env *env, ehp_u32 table_id, ehp_u64 addr,
			 struct ehp_rule *out);

#ifdef __cplusplus
}
#endif

#endif /* EHPROF_BPF_HOST_WALK_REPLAY_H_ */
