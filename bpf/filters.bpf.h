/* Which current tasks every program records: the followed ones (targets),
 * through -C (the CPU it runs on), --cgroup (its cgroup v2 or one below),
 * --comm (its command name). Cheapest first. */
#ifndef EHPROF_BPF_FILTERS_BPF_H_
#define EHPROF_BPF_FILTERS_BPF_H_

EHP_INLINE int passes_filters(void)
{
	if (cfg.filter_cpus) {
		__u32 cpu = bpf_get_smp_processor_id();
		__u8 *on = bpf_map_lookup_elem(&cpu_filter, &cpu);
		if (!on || !*on)
			return 0;
	}
	if (cfg.cgroup_id &&
	    EHP_ANCESTOR_CGROUP_ID(cfg.cgroup_level) != cfg.cgroup_id)
		return 0;
	if (cfg.filter_comm) {
		char comm[EHP_COMM_LEN] = {};
		bpf_get_current_comm(comm, sizeof(comm));
		for (int i = 0; i < EHP_COMM_LEN; i++) {
			if (comm[i] != cfg.comm[i])
				return 0;
			if (!comm[i])
				break;
		}
	}
	return 1;
}

/* Whether the current task (pid, tid) is recorded: in the targets map
 * (process ids for -p, a command and its children; thread ids for -t)
 * when cfg.filter_pids, and through the filters. */
EHP_INLINE int task_wanted(__u32 pid, __u32 tid)
{
	if (cfg.filter_pids && !bpf_map_lookup_elem(&targets, &pid) &&
	    !bpf_map_lookup_elem(&targets, &tid))
		return 0;
	return passes_filters();
}

#endif /* EHPROF_BPF_FILTERS_BPF_H_ */
