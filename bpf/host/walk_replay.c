/* The BPF walk compiled as C (bpf/host/walk_replay.h): the shim's
 * helpers, then the very headers bpf/profiler.bpf.c includes for its
 * stack-recording programs, in the same order and with the same defines. */
#include "bpf/host/bpf_shim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* As bpf/profiler.bpf.c defines them. */
#define EHP_ROW_INDEX_MASK (EHP_ROW_CHUNK_ROWS - 1)
#include "bpf/ehprof_abi.h"
#include "bpf/compat.bpf.h"
#include "bpf/compact_lookup.h"
#include "bpf/arch.bpf.h"
#include "bpf/maps.bpf.h"
#include "bpf/lookup.bpf.h"
#include "bpf/walk.bpf.h"
#include "bpf/python.bpf.h"
#include "bpf/ruby.bpf.h"
#include "bpf/perl.bpf.h"
#include "bpf/php.bpf.h"
#include "bpf/stacks.bpf.h"

#include "bpf/host/walk_replay.h"

/* The walk in progress on this thread. */
static __thread struct ehp_replay_env *replay_env;
static __thread struct task_struct replay_task;
static __thread struct mm_struct replay_mm;
static __thread struct pt_regs replay_regs;

static void *bpf_map_lookup_elem(void *map, const void *key)
{
	enum ehp_replay_map which;
	if (map == &procs)
		which = EHP_REPLAY_MAP_PROCS;
	else if (map == &tables)
		which = EHP_REPLAY_MAP_TABLES;
	else if (map == &pages)
		which = EHP_REPLAY_MAP_PAGES;
	else if (map == &buckets)
		which = EHP_REPLAY_MAP_BUCKETS;
	else if (map == &rows)
		which = EHP_REPLAY_MAP_ROWS;
	else if (map == &palettes)
		which = EHP_REPLAY_MAP_PALETTES;
	else if (map == &rules)
		which = EHP_REPLAY_MAP_RULES;
	else
		return 0; /* stats, notified, the Python, Ruby and Perl maps: empty */
	__u32 k;
	memcpy(&k, key, sizeof(k));
	return replay_env->lookup(replay_env->ctx, which, k);
}

static long bpf_map_update_elem(void *map, const void *key, const void *value, __u64 flags)
{
	return 0; /* notified, py_threads: nothing the replay keeps */
}

static long bpf_probe_read_user(void *dst, __u32 size, const void *unsafe_ptr)
{
	const struct ehp_replay_env *e = replay_env;
	__u64 addr = (__u64)unsafe_ptr;
	if (addr >= e->stack_lo && addr - e->stack_lo <= e->stack_len &&
	    size <= e->stack_len - (addr - e->stack_lo)) {
		memcpy(dst, e->stack + (addr - e->stack_lo), size);
		if (addr + size > replay_env->read_end)
			replay_env->read_end = addr + size;
		return 0;
	}
	memset(dst, 0, size); /* as the kernel leaves dst on a fault */
	return -EFAULT;
}

static long bpf_loop(__u32 nr_loops, void *callback_fn, void *callback_ctx, __u64 flags)
{
	long (*step)(__u32, void *) = (long (*)(__u32, void *))callback_fn;
	__u32 i = 0;
	while (i < nr_loops) {
		long stop = step(i, callback_ctx);
		i++;
		if (stop)
			break;
	}
	return i;
}

static long bpf_ringbuf_output(void *ringbuf, void *data, __u64 size, __u64 flags)
{
	return 0;
}

static __u64 bpf_ringbuf_query(void *ringbuf, __u64 flags)
{
	return 0;
}

static __u64 bpf_ktime_get_ns(void)
{
	return 0;
}

static __u32 bpf_get_smp_processor_id(void)
{
	return 0;
}

static long bpf_get_current_comm(void *buf, __u32 size_of_buf)
{
	memset(buf, 0, size_of_buf);
	return 0;
}

static long bpf_get_stack(void *ctx, void *buf, __u32 size, __u64 flags)
{
	return 0; /* no kernel stack */
}

static struct task_struct *bpf_get_current_task_btf(void)
{
	return &replay_task;
}

static long bpf_task_pt_regs(struct task_struct *task)
{
	return (long)&replay_regs;
}

int ehp_replay_walk(struct ehp_replay_env *env, const ehp_u64 regs[EHP_REG_RIP + 1], int exact,
		    ehp_u32 pid, struct ehp_replay_result *out)
{
	struct scratch *s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	replay_env = env;
	env->read_end = 0;
	memset(&replay_task, 0, sizeof(replay_task));
	replay_mm.arg_end = 1;
	replay_mm.end_code = 1;
	replay_task.mm = &replay_mm; /* a user task, not in exec */
	struct pt_regs *r = &replay_regs;
	memset(r, 0, sizeof(*r));
	r->ax = regs[EHP_REG_RAX];
	r->dx = regs[EHP_REG_RDX];
	r->cx = regs[EHP_REG_RCX];
	r->bx = regs[EHP_REG_RBX];
	r->si = regs[EHP_REG_RSI];
	r->di = regs[EHP_REG_RDI];
	r->bp = regs[EHP_REG_RBP];
	r->sp = regs[EHP_REG_RSP];
	r->r8 = regs[EHP_REG_R8];
	r->r9 = regs[EHP_REG_R8 + 1];
	r->r10 = regs[EHP_REG_R8 + 2];
	r->r11 = regs[EHP_REG_R8 + 3];
	r->r12 = regs[EHP_REG_R8 + 4];
	r->r13 = regs[EHP_REG_R8 + 5];
	r->r14 = regs[EHP_REG_R8 + 6];
	r->r15 = regs[EHP_REG_R8 + 7];
	r->ip = regs[EHP_REG_RIP];
	/* Not in a syscall (orig_ax -1): the leaf pc is exact. */
	r->orig_ax = exact ? (__u64)-1 : 0;

	begin_event(s, EHP_EVENT_SAMPLE, pid, pid);
	collect_stacks(0, s, 0);
	__u32 nk = s->ev.n_kernel, nu = s->ev.n_user;
	if (nu > EHP_MAX_USER_FRAMES)
		nu = EHP_MAX_USER_FRAMES;
	memcpy(out->frames, &s->frames[nk], nu * sizeof(__u64));
	out->n = nu;
	out->stop_reason = s->ev.stop_reason;
	free(s);
	replay_env = 0;
	return 0;
}

int ehp_replay_find_rule(struct ehp_replay_env *env, ehp_u32 table_id, ehp_u64 addr,
			 struct ehp_rule *out)
{
	replay_env = env;
	struct ehp_rule *r = find_rule(table_id, addr);
	if (r)
		*out = *r;
	replay_env = 0;
	return r != 0;
}

int ehp_replay_walk_on(struct ehp_replay_env *env, const struct ehp_deferred *at, ehp_u32 pid,
		       struct ehp_replay_result *out)
{
	struct scratch *s = calloc(1, sizeof(*s));
	if (!s)
		return -1;
	replay_env = env;
	env->read_end = 0;
	begin_event(s, EHP_EVENT_SAMPLE, pid, pid);
	memcpy(s->regs, at->regs, sizeof(s->regs));
	s->valid = at->valid & ALL_REGS;
	s->pc = at->regs[EHP_REG_RIP];
	s->exact = at->exact != 0;
	s->win_len = 0;
	s->rb_jit = RB_JIT_NONE;
	/* The kernel's frames count against the depth limit as in its walk. */
	__u32 before = at->n_user < EHP_MAX_USER_FRAMES ? at->n_user : EHP_MAX_USER_FRAMES;
	struct walk w = {.s = s, .base = 0, .n = before, .pid = pid};
	w.proc = bpf_map_lookup_elem(&procs, &pid);
	if (!w.proc) {
		w.stop = EHP_STOP_NO_PROC;
	} else {
		/* The runtimes' maps are empty here: native frames only. */
		php_begin(s, pid);
		w.python = python_begin(s, pid);
		w.v8 = v8_begin(pid);
		ruby_begin(s, pid);
		perl_begin(s, pid);
		bpf_loop(EHP_MAX_USER_FRAMES, pl_dwarf_step, &w, 0);
	}
	out->n = w.n - before;
	memcpy(out->frames, &s->frames[before], out->n * sizeof(__u64));
	out->stop_reason = walk_stop_reason(&w);
	free(s);
	replay_env = 0;
	return 0;
}
