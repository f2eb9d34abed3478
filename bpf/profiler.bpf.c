// SPDX-License-Identifier: GPL-2.0
/* ehprof's BPF programs, thin: each records an event with the shared walk.
 *  - ehprof_sample (perf_event): the kernel stack and a user stack walked
 *    with the CFI tables user space loaded (bpf/walk.bpf.h);
 *  - ehprof_fork/exec/exit (tracepoints): keep user space's view of the
 *    followed processes current; exec and ehprof_mmap (syscalls:
 *    sys_exit_mmap) also add mappings of loaded tables to process entries
 *    themselves (bpf/proc_learn.bpf.h);
 *  - ehprof_switch (tp_btf/sched_switch, --off-cpu): the time followed
 *    tasks spend off the CPU, with their stacks (bpf/offcpu.bpf.h).
 * Maps: bpf/maps.bpf.h; shared structs: bpf/ehprof_abi.h. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/usdt.bpf.h>

#define EHP_INLINE static __always_inline
/* Rows live in chunks of EHP_ROW_CHUNK_ROWS; see compact_lookup.h. */
#define EHP_ROW_INDEX_MASK (EHP_ROW_CHUNK_ROWS - 1)
/* The walk of HotSpot's Java frames (bpf/hotspot.bpf.h): x86-64's frame
 * layout, in the bpf_loop build. */
#if !defined(EHP_COMPAT) && defined(__TARGET_ARCH_x86)
#define EHP_JVM_WALK 1
#endif
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
#include "bpf/hotspot.bpf.h"
#include "bpf/stacks.bpf.h"
#include "bpf/verify.bpf.h"
#include "bpf/deferred.bpf.h"
#include "bpf/filters.bpf.h"
#include "bpf/offcpu.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#include "bpf/proc_learn.bpf.h"

/* Whether the perf event interrupted user mode. The context is the fixed
 * user ABI, read without CO-RE (struct ehp_user_regs, bpf/arch.bpf.h);
 * context loads must be full width, and volatile keeps clang from
 * narrowing this one to the bits it tests. */
EHP_INLINE int perf_hit_user_mode(struct bpf_perf_event_data *ctx)
{
	const struct ehp_user_regs *uregs = (const struct ehp_user_regs *)ctx;
	return EHP_USER_MODE(*(volatile const __u64 *)&uregs->EHP_MODE_FIELD);
}

/* Sends s (size bytes, flags added to its own), walked since started.
 * Returns s once sent, else NULL. */
EHP_INLINE struct scratch *send_sample(struct scratch *s, __u64 size, __u32 flags, __u64 started)
{
	s->ev.flags |= flags;
	s->ev.bpf_ns = event_done(started);
	if (bpf_ringbuf_output(&events, s, size, sample_wakeup())) {
		count(EHP_STAT_RINGBUF_DROPS);
		return NULL;
	}
	return s;
}

/* --verify's capture of a sent sample's leaf registers and stack. */
EHP_INLINE void verify_sample(struct scratch *s)
{
	if (s && cfg.verify_every && s->ev.n_user > 0) {
		__builtin_memcpy(s->regs, s->leaf_regs, sizeof(s->regs));
		capture_for_verify(s, s->leaf_regs[EHP_REG_RSP]);
	}
}

/* The per-CPU scratch with a sample event begun for the current task, or
 * NULL when it is not recorded: ehprof itself, the idle task caught by the
 * sampler (timer) unless cfg.include_idle, a task the filters leave out.
 * Classic tracepoint and uprobe programs run with preemption off and never
 * nest with the perf_event sampler on a CPU (the kernel's
 * bpf_prog_active), so they all share the per-CPU scratch. */
EHP_INLINE struct scratch *begin_sample(const int timer)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id;
	if ((timer && pid == 0 && !cfg.include_idle) || pid == cfg.self_pid)
		return NULL;
	if (!task_wanted(pid, tid)) {
		count(EHP_STAT_FILTERED);
		return NULL;
	}
	struct scratch *s = scratch_event(pid, tid);
	if (s)
		count(EHP_STAT_SAMPLES);
	return s;
}

/* Records the current task's stacks into s as one sample event (flags
 * added to its own). Returns s once sent, else NULL. */
EHP_INLINE struct scratch *record_sample(void *ctx, struct scratch *s, int user_mode, __u32 flags)
{
	const __u64 started = s->ev.time_ns;
	__u64 size = collect_stacks(ctx, s, user_mode);
	return send_sample(s, size, flags, started);
}

#ifdef EHP_COMPAT
/* The same programs with the walk as tail calls. */
#include "bpf/tailwalk.bpf.h"
#else
SEC("perf_event")
int ehprof_sample(struct bpf_perf_event_data *ctx)
{
	struct scratch *s = begin_sample(1);
	if (!s)
		return 0;
	const __u64 started = s->ev.time_ns;
	__u64 size = collect_stacks(ctx, s, perf_hit_user_mode(ctx));
	defer_walk(s); /* bpf/deferred.bpf.h: before its sample */
	verify_sample(send_sample(s, size, 0, started));
	return 0;
}

/* A probe hit: the current task's stacks, one event a hit. */
EHP_INLINE int probe_hit(void *ctx, int user_mode)
{
	struct scratch *s = begin_sample(0);
	if (s)
		record_sample(ctx, s, user_mode, EHP_SAMPLE_PROBE);
	return 0;
}

/* -e uprobe:/uretprobe:/usdt: user space attaches it where the spec says;
 * the probe is a breakpoint in user code, so ctx holds the exact user
 * registers. */
SEC("uprobe")
int ehprof_uprobe(struct pt_regs *ctx)
{
	return probe_hit(ctx, 1);
}

/* -e usdt:PATH:PROVIDER:NAME: libbpf finds the note and the semaphore. */
SEC("usdt")
int BPF_USDT(ehprof_usdt)
{
	return probe_hit(ctx, 1);
}

/* -e kprobe:FUNC: a kernel function's entry; the user stack is the one
 * that entered the kernel. */
SEC("kprobe")
int ehprof_kprobe(struct pt_regs *ctx)
{
	return probe_hit(ctx, 0);
}

/* -e tracepoint:CAT:NAME. */
SEC("tracepoint")
int ehprof_tracepoint(void *ctx)
{
	return probe_hit(ctx, 0);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(ehprof_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	offcpu_switch_out(ctx, prev, preempt);
	offcpu_switch_in(next);
	return 0;
}
#endif /* EHP_COMPAT */

/* An exec needs its maps read while the process lives (a 1 ms child is
 * gone otherwise): forced, since a plain wake-up is skipped while samples
 * (sent without one) wait unread. Forks and exits go with the samples. */
EHP_INLINE __u64 lifecycle_wakeup(__u32 kind)
{
	return kind == EHP_EVENT_EXEC ? BPF_RB_FORCE_WAKEUP : sample_wakeup();
}

EHP_INLINE void lifecycle_event(__u32 kind, struct task_struct *p, __u64 addr, __u64 time_ns)
{
	struct ehp_event ev = {};
	ev.kind = kind;
	ev.pid = p->tgid;
	ev.tid = p->pid;
	ev.time_ns = time_ns;
	ev.addr = addr;
	bpf_probe_read_kernel_str(ev.comm, sizeof(ev.comm), p->comm);
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), lifecycle_wakeup(kind)))
		count(EHP_STAT_EVENT_DROPS);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(ehprof_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = parent->tgid, cpid = child->tgid;
	if (ppid == cpid || !followed(ppid))
		return 0;
	if (cfg.filter_pids) {
		__u8 followed_value = EHP_TARGET_PROCESS;
		bpf_map_update_elem(&targets, &cpid, &followed_value, BPF_ANY);
	}
	/* The child maps what its parent maps: it unwinds from its first
	 * sample, not after user space has read its maps. */
	struct ehp_proc *parent_entry = cfg.learn_maps ? bpf_map_lookup_elem(&procs, &ppid) : 0;
	if (parent_entry)
		bpf_map_update_elem(&procs, &cpid, parent_entry, BPF_ANY);
	lifecycle_event(EHP_EVENT_FORK, parent, cpid, bpf_ktime_get_ns());
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(ehprof_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	/* The new image's time begins before anything here: a sample taken
	 * while this program runs (the NMI interrupting it, the user registers
	 * already the new image's entry, the process's entry deleted below) is
	 * finished late and named with the new image's mappings, not the old
	 * (user space takes a sample timed at an exec as the new image's). */
	__u64 now = bpf_ktime_get_ns();
	__u32 pid = p->tgid, tid = p->pid;
	/* Earlier still: a sample taken after start_thread, before this
	 * program (bpf/stacks.bpf.h exec_regs_stale). */
	struct ehp_exec_start *start = bpf_map_lookup_elem(&exec_starts, &tid);
	if (start) {
		if (start->mm == (__u64)p->mm && start->time_ns < now)
			now = start->time_ns;
		bpf_map_delete_elem(&exec_starts, &tid);
	}
	if (!followed(pid))
		return 0;
	/* The entry describes the old image: walking the new one with it
	 * would use the wrong tables until user space re-reads the maps. */
	bpf_map_delete_elem(&procs, &pid);
	/* The new image's first unknown pc is news at once, whatever the old
	 * one asked for a moment ago. */
	bpf_map_delete_elem(&notified, &pid);
	lifecycle_event(EHP_EVENT_EXEC, p, 0, now);
	if (cfg.learn_maps)
		learn_exec(p, pid);
	return 0;
}

/* The fields of a syscall exit tracepoint (events/syscalls/sys_exit_* /format). */
struct ehp_syscall_exit {
	__u64 common;
	__s32 nr;
	__u32 pad;
	__s64 ret;
};

SEC("tracepoint/syscalls/sys_exit_mmap")
int ehprof_mmap(struct ehp_syscall_exit *ctx)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	if (!cfg.learn_maps || !followed(pid))
		return 0;
	learn_mmap(ctx->ret);
	return 0;
}

/* The same where tracefs is out of reach (CAP_BPF and CAP_PERFMON without
 * root: the tracepoint's id is read from tracefs, root's alone): the raw
 * sys_exit tracepoint needs no tracefs, but runs at every system call's
 * exit, so it is only the fallback. */
SEC("tp_btf/sys_exit")
int BPF_PROG(ehprof_mmap_raw, struct pt_regs *regs, long ret)
{
	if (EHP_SYSCALL_NR(regs) != EHP_NR_MMAP)
		return 0;
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	if (!cfg.learn_maps || !followed(pid))
		return 0;
	learn_mmap(ret);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(ehprof_exit, struct task_struct *p)
{
	__u32 pid = p->tgid;
	/* The process is gone when its last thread exits (signal->live counts
	 * the threads still running; do_exit drops it before this tracepoint),
	 * which need not be the group leader. */
	if (p->signal->live.counter != 0 || !followed(pid))
		return 0;
	lifecycle_event(EHP_EVENT_EXIT, p, 0, bpf_ktime_get_ns());
	/* Cleared here, not only by user space: an EXIT event lost to a full
	 * ring buffer must not leave a stale entry for a reused pid. The entry
	 * last: a sample taken while this program runs (its user stack is all
	 * there, the mm not yet torn down) is walked with it. */
	bpf_map_delete_elem(&notified, &pid);
	if (cfg.filter_pids)
		bpf_map_delete_elem(&targets, &pid);
	bpf_map_delete_elem(&procs, &pid);
	return 0;
}
