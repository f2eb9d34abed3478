/* What the kernel side learns of a process by itself, so a process whose
 * files' tables are loaded unwinds from its first sample, before user
 * space has read /proc/PID/maps (a 1 ms child is gone before it could):
 *  - at exec: the executable and its interpreter (ld.so), placed by the
 *    saved auxv's AT_ENTRY and AT_BASE;
 *  - at mmap (syscalls:sys_exit_mmap) of a file's executable segment:
 *    the libraries ld.so and dlopen map.
 * Files are matched by kernel identity (dev, inode) in file_tables, which
 * user space fills as it meets files (their tables loaded, being built, or
 * none). Each mapping added is also sent as an
 * EHP_EVENT_MAPPING so user space can resolve its addresses. /proc stays
 * the source of truth: user space's next full entry replaces all this.
 * Included after bpf/lookup.bpf.h (notify). */
#ifndef EHPROF_BPF_PROC_LEARN_BPF_H_
#define EHPROF_BPF_PROC_LEARN_BPF_H_

#define EHP_AT_NULL 0
#define EHP_AT_BASE 7
#define EHP_AT_ENTRY 9
#define EHP_AUXV_PAIRS 32 /* saved_auxv holds fewer; AT_NULL ends it */
#define EHP_PROT_EXEC 0x4
#define EHP_MAP_ANONYMOUS 0x20
#define EHP_PAGE_MASK 4095ull
#define EHP_MAX_ERRNO 4095
#define EHP_NR_MMAP EHP_ARCH_NR_MMAP /* bpf/arch.bpf.h */

EHP_INLINE struct ehp_file_info *file_info_of(struct inode *inode, struct ehp_file_key *key)
{
	key->dev = BPF_CORE_READ(inode, i_sb, s_dev);
	key->ino = BPF_CORE_READ(inode, i_ino);
	struct ehp_file_info *info = bpf_map_lookup_elem(&file_tables, key);
	if (!info || info->size != (__u64)BPF_CORE_READ(inode, i_size))
		return 0;
	return info;
}

/* Adds [begin, end) of a file (table from info) to pid's entry and tells
 * user space. */
EHP_INLINE void add_kernel_mapping(struct ehp_proc *proc, __u32 pid, __u64 begin, __u64 end,
				   __u64 bias, const struct ehp_file_info *info,
				   const struct ehp_file_key *key)
{
	if (end <= begin)
		return;
	__u32 slot = EHP_FETCH_ADD(&proc->n_kernel, 1);
	if (slot >= EHP_KERNEL_MAPPINGS)
		return; /* full until user space's next entry: /proc covers it */
	struct ehp_mapping *m = &proc->kernel[slot];
	m->bias = bias;
	m->table_id = info->table_id;
	m->flags = info->flags & (EHP_MAPPING_HAS_TABLE | EHP_MAPPING_PENDING);
	m->begin = begin;
	m->end = end;

	struct ehp_mapping_event e = {};
	e.ev.kind = EHP_EVENT_MAPPING;
	e.ev.pid = pid;
	e.ev.tid = (__u32)bpf_get_current_pid_tgid();
	e.ev.time_ns = bpf_ktime_get_ns();
	e.ev.addr = info->x_offset; /* begin is always bias + x_begin */
	e.m = *m;
	e.file = *key;
	/* Not urgent: read with the samples (an immediate wake-up is an IPI
	 * in every exec). */
	if (bpf_ringbuf_output(&events, &e, sizeof(e), sample_wakeup()))
		count(EHP_STAT_EVENT_DROPS);
}

/* The saved auxv's AT_ENTRY and AT_BASE. */
EHP_INLINE void read_auxv(struct mm_struct *mm, __u64 *entry, __u64 *base)
{
	__u64 pair[2];
	for (int i = 0; i < EHP_AUXV_PAIRS; i++) {
		if (bpf_probe_read_kernel(pair, sizeof(pair), &mm->saved_auxv[2 * i]))
			return;
		if (pair[0] == EHP_AT_NULL)
			return;
		if (pair[0] == EHP_AT_ENTRY)
			*entry = pair[1];
		else if (pair[0] == EHP_AT_BASE)
			*base = pair[1];
	}
}

/* The vDSO, at mm->context.vdso (x86), once user space has published it. */
EHP_INLINE void learn_vdso(struct ehp_proc *proc, __u32 pid, struct mm_struct *mm)
{
	struct ehp_file_key key = {EHP_VDSO_KEY_DEV, EHP_VDSO_KEY_INO};
	struct ehp_file_info *found = bpf_map_lookup_elem(&file_tables, &key);
	__u64 base = (__u64)BPF_CORE_READ(mm, context.vdso);
	if (!found || !base)
		return;
	struct ehp_file_info info = *found;
	__u64 bias = base - info.first_vaddr;
	add_kernel_mapping(proc, pid, bias + info.x_begin, bias + info.x_end, bias, &info, &key);
}

/* At exec (the new image is in place): an entry with the executable and
 * its interpreter when user space has published the executable. */
EHP_INLINE void learn_exec(struct task_struct *p, __u32 pid)
{
	struct mm_struct *mm = p->mm;
	if (!mm || !mm->exe_file)
		return;
	struct ehp_file_key key, ikey;
	struct ehp_file_info *exe = file_info_of(mm->exe_file->f_inode, &key);
	if (!exe)
		return;
	__u64 at_entry = 0, at_base = 0;
	read_auxv(mm, &at_entry, &at_base);
	if (!at_entry)
		return;
	__u32 zero = 0;
	struct ehp_proc *z = bpf_map_lookup_elem(&zero_proc, &zero);
	if (!z || bpf_map_update_elem(&procs, &pid, z, BPF_ANY))
		return;
	struct ehp_proc *proc = bpf_map_lookup_elem(&procs, &pid);
	if (!proc)
		return;
	/* Copied: the value may change (or go) once the entry is in the map. */
	struct ehp_file_info x = *exe;
	__u64 bias = at_entry - x.entry;
	add_kernel_mapping(proc, pid, bias + x.x_begin, bias + x.x_end, bias, &x, &key);
	learn_vdso(proc, pid, mm);
	if (!at_base || !x.interp.ino)
		return;
	ikey = x.interp;
	struct ehp_file_info *interp = bpf_map_lookup_elem(&file_tables, &ikey);
	if (!interp)
		return;
	struct ehp_file_info in = *interp;
	bias = at_base - in.first_vaddr;
	add_kernel_mapping(proc, pid, bias + in.x_begin, bias + in.x_end, bias, &in, &ikey);
}

/* The file open as fd in the current task. */
EHP_INLINE struct file *fd_file(struct task_struct *task, __u64 fd)
{
	struct fdtable *fdt = BPF_CORE_READ(task, files, fdt);
	if (!fdt || fd >= BPF_CORE_READ(fdt, max_fds))
		return 0;
	struct file **fds = BPF_CORE_READ(fdt, fd);
	struct file *f = 0;
	bpf_probe_read_kernel(&f, sizeof(f), &fds[fd]);
	return f;
}

/* After an mmap that made a file's executable segment executable: the
 * segment into the caller's entry, when it has one and user space has
 * published the file. */
EHP_INLINE void learn_mmap(__s64 ret)
{
	if (ret < 0 && ret >= -EHP_MAX_ERRNO)
		return;
	__u32 pid = bpf_get_current_pid_tgid() >> 32;
	struct ehp_proc *proc = bpf_map_lookup_elem(&procs, &pid);
	if (!proc)
		return; /* user space reads the maps of processes it learns of */
	struct task_struct *task = EHP_CURRENT_TASK();
	struct ehp_user_regs regs;
	/* The syscall's arguments, as the task entered it (bpf/arch.bpf.h:
	 * which registers hold them). */
	if (bpf_probe_read_kernel(&regs, sizeof(regs), (const void *)EHP_TASK_PT_REGS(task)))
		return;
	if (!(EHP_MMAP_PROT(&regs) & EHP_PROT_EXEC) || (EHP_MMAP_FLAGS(&regs) & EHP_MAP_ANONYMOUS))
		return;
	struct file *f = fd_file(task, EHP_MMAP_FD(&regs));
	if (!f)
		return;
	struct ehp_file_key key;
	struct ehp_file_info *found = file_info_of(BPF_CORE_READ(f, f_inode), &key);
	if (!found) {
		/* Rate-limited per process (bpf/lookup.bpf.h), as unknown pcs. */
		notify(EHP_EVENT_NEW_FILE, pid, (__u32)bpf_get_current_pid_tgid(), (__u64)ret);
		return;
	}
	struct ehp_file_info info = *found;
	if (EHP_MMAP_OFF(&regs) != info.x_offset)
		return; /* not where the loader maps the text */
	__u64 begin = (__u64)ret;
	__u64 bias = begin - info.x_begin;
	__u64 end = begin + ((EHP_MMAP_LEN(&regs) + EHP_PAGE_MASK) & ~EHP_PAGE_MASK);
	if (end > bias + info.x_end)
		end = bias + info.x_end;
	add_kernel_mapping(proc, pid, begin, end, bias, &info, &key);
}

#endif /* EHPROF_BPF_PROC_LEARN_BPF_H_ */
