/* Lookups the walk makes per frame: the mapping holding a pc (the procs
 * map) and the CFI rule for an ELF address (the table maps), plus the
 * rate-limited note to user space about what it could not find. Included
 * after bpf/maps.bpf.h. */
#ifndef EHPROF_BPF_LOOKUP_BPF_H_
#define EHPROF_BPF_LOOKUP_BPF_H_

#define NOTIFY_INTERVAL_NS 2000000ull
#define EHP_PF_EXITING 0x00000004 /* include/linux/sched.h */

EHP_INLINE void notify(__u32 kind, __u32 pid, __u32 tid, __u64 addr)
{
	/* An exiting process (PF_EXITING) is past its exit cleanup's reach:
	 * an entry made now would outlive it, and there is nothing to read. */
	if (EHP_TASK_FLAGS(EHP_CURRENT_TASK()) & EHP_PF_EXITING)
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
	/* Forced: a plain wake-up is skipped while earlier records (samples,
	 * sent without one) wait unread, and user space must read the maps
	 * while the process is still there. */
	if (bpf_ringbuf_output(&events, &ev, sizeof(ev), BPF_RB_FORCE_WAKEUP))
		count(EHP_STAT_EVENT_DROPS);
}

/* Which mapping of proc holds addr: an index into proc->mappings, then
 * EHP_MAX_MAPPINGS + i for proc->kernel[i]; -1 for none. The sorted
 * mappings by binary search first; then the kernel side's additions since,
 * newest first (a newer mapping at the same place replaced an older one).
 * A global function: the verifier checks it once, not at every frame
 * (the tail-call build's differs: bpf/compat.bpf.h). */
EHP_SEARCH_FN int EHP_MAPPING_SLOT(struct ehp_proc *proc, __u64 addr)
{
	if (!proc)
		return -1;
	__u32 lo = 0, n = proc->n_mappings;
	if (n > EHP_MAX_MAPPINGS)
		return -1;
	if (n > 0) {
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
		if (addr >= m->begin && addr < m->end)
			return (int)(lo & (EHP_MAX_MAPPINGS - 1));
	}
	__u32 k = proc->n_kernel;
#pragma clang loop unroll(disable)
	for (int i = EHP_KERNEL_MAPPINGS - 1; i >= 0; i--) {
		struct ehp_mapping *m = &proc->kernel[i];
		if ((__u32)i < k && addr >= m->begin && addr < m->end)
			return EHP_MAX_MAPPINGS + i;
	}
	return -1;
}

#ifdef EHP_COMPAT
/* 5.10 passes a global function scalars only: this one searches the
 * current process's entry, which is the one every walk uses (the walked
 * stack is the current task's). */
__noinline int mapping_slot_current(__u64 addr)
{
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	return mapping_slot_inline(bpf_map_lookup_elem(&procs, &pid), addr);
}

EHP_INLINE int mapping_slot(struct ehp_proc *proc, __u64 addr)
{
	return mapping_slot_current(addr);
}
#endif

/* The mapping holding addr, or 0. */
EHP_INLINE struct ehp_mapping *find_mapping(struct ehp_proc *proc, __u64 addr)
{
	int slot = mapping_slot(proc, addr);
	if (slot < 0 || slot >= EHP_MAX_MAPPINGS + EHP_KERNEL_MAPPINGS)
		return 0;
	/* proc->kernel follows proc->mappings (ehp_proc's layout assert). */
	return (struct ehp_mapping *)((__u8 *)proc->mappings + (__u32)slot * sizeof(struct ehp_mapping));
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

#endif /* EHPROF_BPF_LOOKUP_BPF_H_ */
