/* The maps and load-time settings every ehprof BPF program shares.
 * Included once, by profiler.bpf.c, after vmlinux.h and bpf/ehprof_abi.h.
 *
 * Sizes here are the defaults from bpf/ehprof_abi.h; user space resizes the
 * table maps from --table-memory before loading (MapSizes,
 * agent/tables/map_sizes.h, and BpfSession::Start,
 * agent/session/bpf_session.cc). */
#ifndef EHPROF_BPF_MAPS_BPF_H_
#define EHPROF_BPF_MAPS_BPF_H_

const volatile struct ehp_config cfg = {
    .unwinder = EHP_UNWINDER_DWARF,
    .user_stacks = 1,
    .kernel_stacks = 1,
    .max_frames = EHP_MAX_USER_FRAMES,
    .learn_maps = 1,
};

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EHP_DEFAULT_RINGBUF_BYTES);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EHP_DEFAULT_PROCS);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct ehp_proc);
} procs SEC(".maps");

/* Files user space has met, by kernel identity: the exec and mmap
 * programs add mappings of them to process entries (bpf/proc_learn.bpf.h). */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EHP_DEFAULT_TABLES);
	__type(key, struct ehp_file_key);
	__type(value, struct ehp_file_info);
} file_tables SEC(".maps");

/* An all-zero process entry, the source of new entries the kernel side
 * makes (too large for the BPF stack). Never written. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct ehp_proc);
} zero_proc SEC(".maps");

/* pid or tid -> enum ehp_target, when cfg.filter_pids. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EHP_MAX_TARGETS);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

/* CPU -> 1 when -C names it (cfg.filter_cpus). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EHP_MAX_FILTER_CPUS);
	__type(key, __u32);
	__type(value, __u8);
} cpu_filter SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EHP_DEFAULT_TABLES);
	__type(key, __u32);
	__type(value, struct ehp_table_info);
} tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EHP_DEFAULT_PAGES);
	__type(key, __u32);
	__type(value, struct ehp_page);
} pages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EHP_DEFAULT_PAGES);
	__type(key, __u32);
	__type(value, struct ehp_buckets);
} buckets SEC(".maps");

struct row_chunk {
	__u8 bytes[EHP_ROW_CHUNK_ROWS * EHP_ROW_BYTES];
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EHP_DEFAULT_ROW_CHUNKS);
	__type(key, __u32);
	__type(value, struct row_chunk);
} rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EHP_DEFAULT_PALETTE_WORDS);
	__type(key, __u32);
	__type(value, __u64); /* EHP_PALETTE_PER_WORD rule ids */
} palettes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, EHP_DEFAULT_RULES);
	__type(key, __u32);
	__type(value, struct ehp_rule);
} rules SEC(".maps");

/* Each bpf_probe_read_user costs ~75 ns however small (measured here),
 * while an unwind reads upwards through the stack a word or two a frame:
 * reading a window at once and serving later reads from it cuts the cost
 * per frame by several times. */
#define STACK_WINDOW 2048
#define PAGE_SIZE_BYTES 4096

/* The sample being built: header and frames contiguous, so one
 * bpf_ringbuf_output sends both. */
struct scratch {
	struct ehp_event ev;
	__u64 frames[EHP_MAX_EVENT_FRAMES];
	/* walk state: registers in DWARF numbering */
	__u64 regs[EHP_REG_RIP + 1];
	__u32 valid; /* bit per register in regs */
	__u32 exact; /* pc is an interrupted pc, not a return address */
	__u64 pc;
	/* Read-ahead window over the user stack: [win_lo, win_lo + win_len). */
	__u64 win_lo;
	__u32 win_len;
	__u32 leaf_exact; /* --verify: exact at the leaf */
	__u64 leaf_regs[EHP_REG_RIP + 1];
	ehp_sigcontext sig; /* a signal frame's saved registers */
	/* The Python walk (bpf/python.bpf.h) of this sample's process: its eval
	 * loop's two ranges [begin, end) (all 0 when the walk is off) and
	 * whether the Python walk has steps of its own to take. The user walk
	 * reads them before it calls py_step, so a native step outside the eval
	 * loop pays no call; in a map value they multiply no verifier states. */
	__u64 py_eval[4];
	__u32 py_busy;
	__u32 py_pad;
	/* The JVM's code cache of this sample's process, [lo, hi) (zeros:
	 * none), where the walk calls jvm_step (bpf/hotspot.bpf.h). */
	__u64 jvm_code[2];
	/* Anonymous executable memory outside the entry's mappings that a
	 * step of this walk found (bpf/fp_fallback.bpf.h), [lo, hi) (zeros:
	 * none): the next step, at a pc in it, needs no bpf_find_vma, which
	 * answers once a sample in an interrupt (its lock is let go after
	 * the program, EBUSY till then). */
	__u64 new_jit[2];
	__u8 win[STACK_WINDOW];
	/* The Ruby walk (bpf/ruby.bpf.h): vm_exec_core's range [begin, end)
	 * (zeros: off) and whether the Ruby walk has steps of its own; read
	 * before rb_step is called, as py_eval and py_busy; rb_jit, where a
	 * walk in JIT code is (enum rb_jit_state, bpf/ruby_yjit.bpf.h). */
	__u64 rb_vm[2];
	__u32 rb_busy;
	__u32 rb_jit;
	/* The PHP walk (bpf/php.bpf.h) of this sample's process: its VM's
	 * ranges [begin, end), begin and end in turn (zeros: none), where the
	 * walk calls php_step, and
	 * whether a VM call still has frames for the next step. */
	__u64 php_vm[2 * EHP_PHP_VM_RANGES];
	__u32 php_busy;
	__u32 php_pad;
	/* The Perl walk (bpf/perl.bpf.h): the run loop's range (zeros: off)
	 * and whether a run loop call still has frames for the next step. */
	__u64 pl_vm[2];
	__u32 pl_busy;
	/* cfg.interp_alternate: this CPU's samples so far, whose parity says
	 * whether the next walks the interpreters' frames. */
	__u32 interp_turn;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

/* --verify's capture: event header, registers and up to 64 KiB of stack. */
struct verify_scratch {
	struct ehp_event ev;
	struct ehp_verify v;
	/* A page of slack past EHP_VERIFY_STACK_MAX lets every copy be a masked
	 * offset plus at most a page, bounds the verifier can follow; only
	 * EHP_VERIFY_STACK_MAX bytes are sent. */
	__u8 stack[EHP_VERIFY_STACK_MAX + PAGE_SIZE_BYTES];
	__u64 counter; /* samples seen on this CPU */
};
/* A plain array indexed by CPU: per-CPU map values are capped at 32 KiB.
 * Safe without locking: the sampler runs with preemption off. User space
 * sizes it to the possible CPUs. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct verify_scratch);
} verify_scratch SEC(".maps");

/* A deferred walk's copy (bpf/deferred.bpf.h): event header, the walk's
 * state and up to EHP_DEFERRED_STACK_MAX bytes of stack, a page of slack
 * as verify_scratch has. Indexed by CPU like it; user space sizes it to
 * the possible CPUs when deferral is on. */
struct deferred_scratch {
	struct ehp_event ev;
	struct ehp_deferred d;
	__u8 stack[EHP_DEFERRED_STACK_MAX + PAGE_SIZE_BYTES];
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct deferred_scratch);
} deferred_scratch SEC(".maps");

/* Each CPU's token bucket of bytes for deferred copies. */
struct deferred_budget {
	__u64 last_ns;
	__u64 tokens;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct deferred_budget);
} deferred_budget SEC(".maps");

/* Each process's EHP_STOP_NO_MAPPING copies in its current second
 * (bpf/deferred.bpf.h). */
struct deferred_nomap {
	__u64 window_ns;
	__u64 count;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EHP_DEFERRED_NOMAP_PROCS);
	__type(key, __u32);
	__type(value, struct deferred_nomap);
} deferred_nomap SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EHP_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Each CPU's walk time in its current budget window (bpf/walk.bpf.h). */
struct cpu_budget {
	__u64 window_start;
	__u64 used_ns;
};
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct cpu_budget);
} cpu_budget SEC(".maps");

/* A sample taken between the ELF loader's start_thread and ehprof_exec
 * (bpf/stacks.bpf.h exec_regs_stale): its time, which ehprof_exec gives
 * its exec event, and the mm it was taken in, by thread. */
struct ehp_exec_start {
	__u64 mm;
	__u64 time_ns;
};
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EHP_EXEC_START_ENTRIES);
	__type(key, __u32);
	__type(value, struct ehp_exec_start);
} exec_starts SEC(".maps");

/* Last time an UNKNOWN_PID / UNKNOWN_PC event went out for a pid. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EHP_NOTIFIED_ENTRIES);
	__type(key, __u32);
	__type(value, __u64);
} notified SEC(".maps");

EHP_INLINE void count(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &stat);
	if (v)
		*v += 1;
}

EHP_INLINE int followed(__u32 pid)
{
	return !cfg.filter_pids || bpf_map_lookup_elem(&targets, &pid);
}

#endif /* EHPROF_BPF_MAPS_BPF_H_ */
