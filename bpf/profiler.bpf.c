// SPDX-License-Identifier: GPL-2.0
/* ehprof's perf_event program: on each sample, the kernel stack and a user
 * stack walked with the CFI tables user space loaded (bpf/ehprof_abi.h),
 * frame pointers where a mapping has no table; plus the tracepoints that
 * keep user space's view of processes current. */
#include "vmlinux.h"

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

#define EHP_INLINE static __always_inline
/* Rows live in chunks of EHP_ROW_CHUNK_ROWS; see compact_lookup.h. */
#define EHP_ROW_INDEX_MASK (EHP_ROW_CHUNK_ROWS - 1)
#include "bpf/ehprof_abi.h"
#include "bpf/compact_lookup.h"

char LICENSE[] SEC("license") = "GPL";

const volatile struct ehp_config cfg = {
	.unwinder = EHP_UNWINDER_DWARF,
	.user_stacks = 1,
	.kernel_stacks = 1,
	.max_frames = EHP_MAX_USER_FRAMES,
};

/* Sizes of the table maps are set by user space before loading
 * (SizesForMemory in agent/cli/cli.cc plans them from --table-memory;
 * BpfSession sets them, agent/session/bpf_session.cc). */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u32);
	__type(value, struct ehp_proc);
} procs SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u8);
} targets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct ehp_table_info);
} tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 16);
	__type(key, __u32);
	__type(value, struct ehp_page);
} pages SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 16);
	__type(key, __u32);
	__type(value, struct ehp_buckets);
} buckets SEC(".maps");

struct row_chunk {
	__u8 bytes[EHP_ROW_CHUNK_ROWS * EHP_ROW_BYTES];
};
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, struct row_chunk);
} rows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 16);
	__type(key, __u32);
	__type(value, __u64); /* EHP_PALETTE_PER_WORD rule ids */
} palettes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1 << 16);
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
	__u32 pad;
	__u64 leaf_regs[EHP_REG_RIP + 1];
	__u8 win[STACK_WINDOW];
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
	__u8 stack[EHP_VERIFY_STACK_MAX + 4096];
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

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EHP_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* Last time an UNKNOWN_PID / UNKNOWN_PC event went out for a pid. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, __u64);
} notified SEC(".maps");

#define NOTIFY_INTERVAL_NS 2000000ull
#define EHP_PF_EXITING 0x00000004 /* include/linux/sched.h */
#define REG_BIT(r) (1u << (r))
#define ALL_REGS ((1u << (EHP_REG_RIP + 1)) - 1)
/* x86-64: struct ucontext's uc_mcontext (a struct sigcontext) sits 40
 * bytes into the frame __restore_rt runs on. */
#define UCONTEXT_MCONTEXT_OFFSET 40

/* The registers at the start of a perf_event program's context
 * (bpf_user_pt_regs_t): x86-64's user ABI struct pt_regs
 * (arch/x86/include/uapi/asm/ptrace.h), the same layout on every kernel.
 * Declared here, outside vmlinux.h, so reads through it are plain loads at
 * fixed offsets and never CO-RE relocations: the kernel's own struct
 * pt_regs is what vmlinux.h describes, and its fields change type across
 * kernels (since 6.9 `cs` is a u16 inside the FRED union; on 6.1 an
 * unsigned long, so an 8-byte read relocated against 6.9+ BTF fails to
 * load there). */
struct ehp_user_regs {
	__u64 r15, r14, r13, r12, bp, bx, r11, r10, r9, r8;
	__u64 ax, cx, dx, si, di, orig_ax, ip, cs, flags, sp, ss;
};
_Static_assert(sizeof(struct ehp_user_regs) == 21 * 8, "x86-64 user pt_regs is 21 words");
_Static_assert(__builtin_offsetof(struct ehp_user_regs, cs) == 136, "cs sits at 136 in the user ABI");

EHP_INLINE void count(__u32 stat)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &stat);
	if (v)
		*v += 1;
}

EHP_INLINE void notify(__u32 kind, __u32 pid, __u32 tid, __u64 addr)
{
	/* An exiting process (PF_EXITING) is past its exit cleanup's reach:
	 * an entry made now would outlive it, and there is nothing to read. */
	if (bpf_get_current_task_btf()->flags & EHP_PF_EXITING)
		return;
	__u64 now = bpf_ktime_get_ns();
	__u64 *last = bpf_map_lookup_elem(&notified, &pid);
	if (last && now - *last < NOTIFY_INTERVAL_NS)
		return;
	bpf_map_update_elem(&notified, &pid, &now, BPF_ANY);
	struct ehp_event ev = {};
	ev.kind = kind;
	ev.pid = pid;
	ev.tid = tid;
	ev.time_ns = now;
	ev.addr = addr;
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), 0))
		count(EHP_STAT_EVENT_DROPS);
}

/* The mapping holding addr, by binary search over the sorted mappings. */
EHP_INLINE struct ehp_mapping *find_mapping(struct ehp_proc *proc, __u64 addr)
{
	__u32 lo = 0, n = proc->n_mappings;
	if (n == 0 || n > EHP_MAX_MAPPINGS)
		return 0;
	for (int i = 0; i < EHP_MAPPING_SEARCH_STEPS; i++) {
		__u32 half = n >> 1;
		if (half == 0)
			break;
		__u32 mid = (lo + half) & (EHP_MAX_MAPPINGS - 1);
		if (proc->mappings[mid].begin <= addr)
			lo = mid;
		n -= half;
	}
	struct ehp_mapping *m = &proc->mappings[lo & (EHP_MAX_MAPPINGS - 1)];
	if (addr < m->begin || addr >= m->end)
		return 0;
	return m;
}

/* The rule for ELF address addr in table table_id; 0 when there is none. */
EHP_INLINE struct ehp_rule *find_rule(__u32 table_id, __u64 addr)
{
	struct ehp_table_info *t = bpf_map_lookup_elem(&tables, &table_id);
	if (!t)
		return 0;
	__u32 page;
	__u16 key;
	__u32 shift = t->page_shift;
	if (shift < EHP_PAGE_SHIFT_MIN || shift > EHP_PAGE_SHIFT_MAX)
		return 0;
	if (!ehp_page_of(addr, t->start, t->end, shift, &page, &key) || page >= t->num_pages)
		return 0;
	__u32 gp = t->page_base + page;
	struct ehp_page *pg = bpf_map_lookup_elem(&pages, &gp);
	struct ehp_buckets *bk = bpf_map_lookup_elem(&buckets, &gp);
	if (!pg || !bk)
		return 0;
	__u32 lo, hi;
	ehp_bucket_range(bk, pg->num_rows, shift, key, &lo, &hi);
	__u32 chunk = pg->first_row / EHP_ROW_CHUNK_ROWS;
	struct row_chunk *rc = bpf_map_lookup_elem(&rows, &chunk);
	if (!rc || hi <= lo)
		return 0;
	__u32 first = (pg->first_row + lo) & EHP_ROW_INDEX_MASK;
	__u32 row = ehp_search_rows(rc->bytes, first, hi - lo, key);
	__u32 gpal = pg->first_palette + ehp_row_palette(rc->bytes, row);
	__u32 word = gpal / EHP_PALETTE_PER_WORD;
	__u64 *pw = bpf_map_lookup_elem(&palettes, &word);
	if (!pw)
		return 0;
	__u32 gr = t->rule_base + (__u16)(*pw >> (16 * (gpal % EHP_PALETTE_PER_WORD)));
	return bpf_map_lookup_elem(&rules, &gr);
}

struct walk {
	struct scratch *s;
	struct ehp_proc *proc;
	__u32 base; /* first frame slot of this walk */
	__u32 n;    /* frames so far */
	__u32 pid;
	__u8 stop;
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
	__u32 len = PAGE_SIZE_BYTES - (addr & (PAGE_SIZE_BYTES - 1));
	if (len > STACK_WINDOW)
		len = STACK_WINDOW;
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
EHP_INLINE int fp_step_state(struct walk *w, __u64 flags)
{
	struct scratch *s = w->s;
	__u64 bp = s->regs[EHP_REG_RBP], ra, next_bp;
	if (!(s->valid & REG_BIT(EHP_REG_RBP)) || bp == 0) {
		w->stop = EHP_STOP_FP_END;
		return 0;
	}
	if ((s->valid & REG_BIT(EHP_REG_RSP)) && bp < s->regs[EHP_REG_RSP]) {
		w->stop = EHP_STOP_BAD_FRAME;
		return 0;
	}
	if (!read_stack_u64(s, bp, &next_bp) || !read_stack_u64(s, bp + 8, &ra)) {
		w->stop = EHP_STOP_READ_FAULT;
		return 0;
	}
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
	return fp_step_state(w, 0) ? 0 : 1;
}

/* Registers of the interrupted context, from the sigcontext the kernel
 * pushed for a signal handler (the frame __restore_rt runs on). */
EHP_INLINE int signal_step(struct walk *w)
{
	struct scratch *s = w->s;
	/* struct sigcontext: r8..r15, rdi, rsi, rbp, rbx, rdx, rax, rcx, rsp, rip */
	__u64 sc[17];
	if (!(s->valid & REG_BIT(EHP_REG_RSP)) ||
	    bpf_probe_read_user(sc, sizeof(sc),
				(void *)(s->regs[EHP_REG_RSP] + UCONTEXT_MCONTEXT_OFFSET))) {
		w->stop = EHP_STOP_READ_FAULT;
		return 0;
	}
	for (int r = 0; r < 8; r++)
		s->regs[EHP_REG_R8 + r] = sc[r];
	s->regs[EHP_REG_RDI] = sc[8];
	s->regs[EHP_REG_RSI] = sc[9];
	s->regs[EHP_REG_RBP] = sc[10];
	s->regs[EHP_REG_RBX] = sc[11];
	s->regs[EHP_REG_RDX] = sc[12];
	s->regs[EHP_REG_RAX] = sc[13];
	s->regs[EHP_REG_RCX] = sc[14];
	s->regs[EHP_REG_RSP] = sc[15];
	s->regs[EHP_REG_RIP] = sc[16];
	s->valid = ALL_REGS;
	s->pc = sc[16];
	s->exact = 1;
	if (s->pc == 0) {
		w->stop = EHP_STOP_BAD_FRAME;
		return 0;
	}
	return push_frame(w, s->pc | EHP_FRAME_EXACT);
}

EHP_INLINE int reg_value(struct scratch *s, __u32 reg, __u64 *out)
{
	if (reg > EHP_REG_RIP || !(s->valid & REG_BIT(reg)))
		return 0;
	*out = s->regs[reg];
	return 1;
}

/* One CFI step: from the current frame's rule to the caller's registers. */
EHP_INLINE int dwarf_step_state(struct walk *w)
{
	struct scratch *s = w->s;
	__u64 pc = s->pc;
	__u64 lookup = s->exact ? pc : pc - 1;
	struct ehp_mapping *m = w->last;
	if (!m || lookup < m->begin || lookup >= m->end)
		m = find_mapping(w->proc, lookup);
	w->last = m;
	if (!m) {
		notify(EHP_EVENT_UNKNOWN_PC, w->pid, s->ev.tid, lookup);
		w->stop = EHP_STOP_NO_MAPPING;
		return 0;
	}
	if (m->flags & EHP_MAPPING_PENDING) {
		w->stop = EHP_STOP_NO_TABLE;
		return 0;
	}
	if (!(m->flags & EHP_MAPPING_HAS_TABLE)) {
		/* JIT code, anonymous memory, a file whose table is not built:
		 * frame pointers are all there is. */
		return fp_step_state(w, EHP_FRAME_FP);
	}
	struct ehp_rule *rule = find_rule(m->table_id, lookup - m->bias);
	if (!rule || rule->cfa_kind == EHP_CFA_NONE) {
		w->stop = EHP_STOP_NO_CFI;
		return 0;
	}
	if (rule->flags & EHP_RULE_FLAG_SIGNAL)
		return signal_step(w);

	__u64 cfa, base;
	__u8 kind = rule->cfa_kind;
	if (kind == EHP_CFA_REG || kind == EHP_CFA_DEREF) {
		if (!reg_value(s, rule->cfa_reg, &base)) {
			w->stop = EHP_STOP_UNSUPPORTED_RULE;
			return 0;
		}
		cfa = base + (__s64)rule->cfa_offset;
		if (kind == EHP_CFA_DEREF) {
			if (!read_stack_u64(s, cfa, &cfa)) {
				w->stop = EHP_STOP_READ_FAULT;
				return 0;
			}
			cfa += (__s64)rule->cfa_deref_add;
		}
	} else if (kind == EHP_CFA_PLT_LIT11 || kind == EHP_CFA_PLT_LIT10) {
		if (!reg_value(s, EHP_REG_RSP, &base)) {
			w->stop = EHP_STOP_UNSUPPORTED_RULE;
			return 0;
		}
		__u64 threshold = kind == EHP_CFA_PLT_LIT11 ? 11 : 10;
		cfa = base + 8 + ((pc & 15) >= threshold ? 8 : 0);
	} else {
		w->stop = EHP_STOP_UNSUPPORTED_RULE;
		return 0;
	}

	if (rule->ra_kind == EHP_RULE_UNDEFINED) {
		w->stop = EHP_STOP_END_OF_STACK;
		return 0;
	}
	__u64 ra;
	if (rule->ra_kind != EHP_RULE_CFA_OFFSET) {
		w->stop = EHP_STOP_UNSUPPORTED_RULE;
		return 0;
	}
	if (!read_stack_u64(s, cfa + (__s64)rule->ra_offset, &ra)) {
		w->stop = EHP_STOP_READ_FAULT;
		return 0;
	}

	__u64 bp = 0;
	int bp_valid = 0;
	switch (rule->rbp_kind) {
	case EHP_RULE_SAME:
		bp_valid = reg_value(s, EHP_REG_RBP, &bp);
		break;
	case EHP_RULE_CFA_OFFSET:
		bp_valid = read_stack_u64(s, cfa + (__s64)rule->rbp_offset, &bp);
		break;
	case EHP_RULE_DEREF:
		if (reg_value(s, rule->rbp_reg, &base))
			bp_valid = read_stack_u64(s, base + (__s64)rule->rbp_offset, &bp);
		break;
	default:
		break;
	}

	__u64 sp = 0;
	if (reg_value(s, EHP_REG_RSP, &sp) && cfa <= sp) {
		w->stop = EHP_STOP_BAD_FRAME;
		return 0;
	}
	if (ra == 0) {
		w->stop = EHP_STOP_BAD_FRAME;
		return 0;
	}
	s->regs[EHP_REG_RSP] = cfa;
	s->regs[EHP_REG_RBP] = bp;
	s->valid = REG_BIT(EHP_REG_RSP) | (bp_valid ? REG_BIT(EHP_REG_RBP) : 0);
	s->pc = ra;
	s->exact = 0;
	return push_frame(w, ra);
}

static long dwarf_step(__u32 i, void *data)
{
	struct walk *w = data;
	return dwarf_step_state(w) ? 0 : 1;
}

/* Loads the user registers into s. On x86-64 every entry from user mode
 * (syscall, interrupt, the sampling timer's or an NMI) saves the user
 * registers at the top of the task's kernel stack, so bpf_task_pt_regs()
 * has them whether the sample hit user or kernel mode. 0 for kernel
 * threads. */
EHP_INLINE int load_user_regs(struct bpf_perf_event_data *ctx, struct scratch *s)
{
	struct task_struct *task = bpf_get_current_task_btf();
	if (!task->mm)
		return 0;
	/* The context is the fixed user ABI, read without CO-RE (see
	 * struct ehp_user_regs). Context loads must be full width; volatile
	 * keeps clang from narrowing this one to the bits it tests. */
	/* regs opens the context (uapi struct bpf_perf_event_data). */
	const struct ehp_user_regs *uregs = (const struct ehp_user_regs *)ctx;
	__u64 cs = *(volatile const __u64 *)&uregs->cs;
	int user_mode = (cs & 3) == 3;
	if (user_mode)
		s->ev.flags |= EHP_SAMPLE_USER_MODE;
	struct pt_regs *r = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!r)
		return 0;
	s->regs[EHP_REG_RAX] = r->ax;
	s->regs[EHP_REG_RDX] = r->dx;
	s->regs[EHP_REG_RCX] = r->cx;
	s->regs[EHP_REG_RBX] = r->bx;
	s->regs[EHP_REG_RSI] = r->si;
	s->regs[EHP_REG_RDI] = r->di;
	s->regs[EHP_REG_RBP] = r->bp;
	s->regs[EHP_REG_RSP] = r->sp;
	s->regs[EHP_REG_R8] = r->r8;
	s->regs[EHP_REG_R8 + 1] = r->r9;
	s->regs[EHP_REG_R8 + 2] = r->r10;
	s->regs[EHP_REG_R8 + 3] = r->r11;
	s->regs[EHP_REG_R8 + 4] = r->r12;
	s->regs[EHP_REG_R8 + 5] = r->r13;
	s->regs[EHP_REG_R8 + 6] = r->r14;
	s->regs[EHP_REG_R8 + 7] = r->r15;
	s->regs[EHP_REG_RIP] = r->ip;
	s->valid = ALL_REGS;
	s->pc = s->regs[EHP_REG_RIP];
	/* Inside a syscall (orig_ax holds its number, not -1) the user pc is
	 * the instruction after `syscall`, which may lie past the end of its
	 * function's FDE (__restore_rt's rt_sigreturn): look it up at pc - 1
	 * like a return address. Interrupted user code keeps its exact pc. */
	s->exact = user_mode || (__s64)r->orig_ax < 0;
	s->win_len = 0;
	return s->pc != 0;
}

/* Copies the user stack from sp upwards, a page at a time (a read that
 * would cross into an unmapped page fails whole), up to the stack top or
 * EHP_VERIFY_STACK_MAX bytes. */
struct copy_ctx {
	struct verify_scratch *vs;
	__u64 sp;
	__u32 len;
};

static long copy_stack_page(__u32 i, void *data)
{
	struct copy_ctx *c = data;
	__u32 off = c->len;
	if (off >= EHP_VERIFY_STACK_MAX)
		return 1;
	__u64 addr = c->sp + off;
	__u32 chunk = 4096 - (__u32)(addr & 4095);
	off &= EHP_VERIFY_STACK_MAX - 1;
	chunk &= 8191;
	if (chunk == 0 || chunk > 4096)
		return 1;
	if (bpf_probe_read_user(&c->vs->stack[off], chunk, (void *)addr))
		return 1;
	c->len = off + chunk;
	return 0;
}

EHP_INLINE void capture_for_verify(struct scratch *s, __u64 rsp)
{
	__u32 cpu = bpf_get_smp_processor_id();
	struct verify_scratch *vs = bpf_map_lookup_elem(&verify_scratch, &cpu);
	if (!vs)
		return;
	if (vs->counter++ % cfg.verify_every)
		return;
	__builtin_memcpy(&vs->ev, &s->ev, sizeof(vs->ev));
	vs->ev.kind = EHP_EVENT_VERIFY;
	__builtin_memcpy(vs->v.regs, s->regs, sizeof(vs->v.regs));
	vs->v.regs[EHP_REG_RSP] = rsp;
	struct copy_ctx c = {.vs = vs, .sp = rsp};
	bpf_loop(EHP_VERIFY_PAGES, copy_stack_page, &c, 0);
	__u32 len = c.len > EHP_VERIFY_STACK_MAX ? EHP_VERIFY_STACK_MAX : c.len;
	vs->v.stack_len = len;
	__u64 size = sizeof(vs->ev) + sizeof(vs->v) + (len & (EHP_VERIFY_STACK_MAX * 2 - 1));
	if (size > sizeof(vs->ev) + sizeof(vs->v) + EHP_VERIFY_STACK_MAX)
		size = sizeof(vs->ev) + sizeof(vs->v) + EHP_VERIFY_STACK_MAX;
	if (bpf_ringbuf_output(&events, vs, size, 0))
		count(EHP_STAT_EVENT_DROPS);
}

/* Saves the leaf registers so a second walk can start from them. */
struct leaf {
	__u64 rsp, rbp, pc;
};

SEC("perf_event")
int ehprof_sample(struct bpf_perf_event_data *ctx)
{
	__u64 id = bpf_get_current_pid_tgid();
	__u32 pid = id >> 32, tid = (__u32)id;
	if (pid == 0 || pid == cfg.self_pid)
		return 0;
	/* Targets hold process ids (-p, a command and its children) and, for
	 * -t, thread ids. */
	if (cfg.filter_pids && !bpf_map_lookup_elem(&targets, &pid) &&
	    !bpf_map_lookup_elem(&targets, &tid)) {
		count(EHP_STAT_FILTERED);
		return 0;
	}
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	if (!s)
		return 0;
	count(EHP_STAT_SAMPLES);
	__builtin_memset(&s->ev, 0, sizeof(s->ev));
	s->ev.kind = EHP_EVENT_SAMPLE;
	s->ev.pid = pid;
	s->ev.tid = tid;
	s->ev.cpu = bpf_get_smp_processor_id();
	s->ev.time_ns = bpf_ktime_get_ns();
	const __u64 started = s->ev.time_ns;
	bpf_get_current_comm(s->ev.comm, sizeof(s->ev.comm));

	__u32 nk = 0;
	if (cfg.kernel_stacks) {
		long bytes = bpf_get_stack(ctx, s->frames, EHP_MAX_KERNEL_FRAMES * sizeof(__u64), 0);
		if (bytes > 0)
			nk = (__u32)bytes / sizeof(__u64);
	}
	if (nk > EHP_MAX_KERNEL_FRAMES)
		nk = EHP_MAX_KERNEL_FRAMES;
	s->ev.n_kernel = nk;

	struct walk w = {.s = s, .base = nk, .pid = pid};
	__u32 nu = 0, nfp = 0;
	s->ev.stop_reason = EHP_STOP_NOT_WALKED;
	if (cfg.user_stacks) {
		if (!load_user_regs(ctx, s)) {
			s->ev.stop_reason = EHP_STOP_NO_USER_STACK;
		} else {
			struct leaf leaf = {s->regs[EHP_REG_RSP], s->regs[EHP_REG_RBP], s->pc};
			/* --verify needs the leaf registers; the walk overwrites them. */
			if (cfg.verify_every)
				__builtin_memcpy(s->leaf_regs, s->regs, sizeof(s->leaf_regs));
			push_frame(&w, s->pc | EHP_FRAME_EXACT);
			if (cfg.unwinder != EHP_UNWINDER_FP) {
				w.proc = bpf_map_lookup_elem(&procs, &pid);
				if (!w.proc) {
					w.stop = EHP_STOP_NO_PROC;
					notify(EHP_EVENT_UNKNOWN_PID, pid, tid, 0);
				} else {
					bpf_loop(EHP_MAX_USER_FRAMES, dwarf_step, &w, 0);
				}
			} else {
				bpf_loop(EHP_MAX_USER_FRAMES, fp_step, &w, 0);
			}
			nu = w.n;
			s->ev.stop_reason = w.stop ? w.stop : EHP_STOP_DEPTH_LIMIT;
			if (cfg.unwinder == EHP_UNWINDER_BOTH) {
				struct walk f = {.s = s, .base = nk + nu, .pid = pid};
				s->regs[EHP_REG_RSP] = leaf.rsp;
				s->regs[EHP_REG_RBP] = leaf.rbp;
				s->valid = REG_BIT(EHP_REG_RSP) | REG_BIT(EHP_REG_RBP);
				s->pc = leaf.pc;
				push_frame(&f, leaf.pc | EHP_FRAME_EXACT);
				bpf_loop(EHP_MAX_USER_FRAMES, fp_step, &f, 0);
				nfp = f.n;
				s->ev.fp_stop_reason = f.stop ? f.stop : EHP_STOP_DEPTH_LIMIT;
			}
		}
	}
	s->ev.n_user = nu;
	s->ev.n_user_fp = nfp;
	__u64 size = sizeof(s->ev) + (__u64)(nk + nu + nfp) * sizeof(__u64);
	if (size > sizeof(s->ev) + sizeof(s->frames))
		size = sizeof(s->ev) + sizeof(s->frames);
	s->ev.bpf_ns = (__u32)(bpf_ktime_get_ns() - started);
	if (bpf_ringbuf_output(&events, s, size, 0))
		count(EHP_STAT_RINGBUF_DROPS);
	else if (cfg.verify_every && nu > 0) {
		__builtin_memcpy(s->regs, s->leaf_regs, sizeof(s->regs));
		capture_for_verify(s, s->leaf_regs[EHP_REG_RSP]);
	}
	return 0;
}

EHP_INLINE int followed(__u32 pid)
{
	return !cfg.filter_pids || bpf_map_lookup_elem(&targets, &pid);
}

EHP_INLINE void lifecycle_event(__u32 kind, struct task_struct *p, __u64 addr)
{
	struct ehp_event ev = {};
	ev.kind = kind;
	ev.pid = p->tgid;
	ev.tid = p->pid;
	ev.time_ns = bpf_ktime_get_ns();
	ev.addr = addr;
	bpf_probe_read_kernel_str(ev.comm, sizeof(ev.comm), p->comm);
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), 0))
		count(EHP_STAT_EVENT_DROPS);
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(ehprof_fork, struct task_struct *parent, struct task_struct *child)
{
	__u32 ppid = parent->tgid, cpid = child->tgid;
	if (ppid == cpid || !followed(ppid))
		return 0;
	if (cfg.filter_pids) {
		__u8 one = 1;
		bpf_map_update_elem(&targets, &cpid, &one, BPF_ANY);
	}
	lifecycle_event(EHP_EVENT_FORK, parent, cpid);
	return 0;
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(ehprof_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u32 pid = p->tgid;
	if (!followed(pid))
		return 0;
	/* The entry describes the old image: walking the new one with it
	 * would use the wrong tables until user space re-reads the maps. */
	bpf_map_delete_elem(&procs, &pid);
	/* The new image's first unknown pc is news at once, whatever the old
	 * one asked for a moment ago. */
	bpf_map_delete_elem(&notified, &pid);
	lifecycle_event(EHP_EVENT_EXEC, p, 0);
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
	/* Cleared here, not only by user space: an EXIT event lost to a full
	 * ring buffer must not leave a stale entry for a reused pid. */
	bpf_map_delete_elem(&procs, &pid);
	bpf_map_delete_elem(&notified, &pid);
	lifecycle_event(EHP_EVENT_EXIT, p, 0);
	if (cfg.filter_pids)
		bpf_map_delete_elem(&targets, &pid);
	return 0;
}
