// How much of each CPU's time the stack walks in the kernel may take
// (ehp_config.walk_budget_ns, bpf/walk.bpf.h).
#ifndef EHPROF_AGENT_RECORD_WALK_BUDGET_H_
#define EHPROF_AGENT_RECORD_WALK_BUDGET_H_

#include <cstdint>
#include <string>

namespace ehprof {

// The kernel's share of a CPU its perf interrupt handlers may take, in
// percent (/proc/sys/kernel/perf_cpu_time_max_percent), as its own
// throttling of NMI-driven events uses it: 25 when unreadable or out of
// range, 100 for 0 (the kernel's "no limit").
uint32_t PerfCpuTimeMaxPercent(const std::string& path = "/proc/sys/kernel/perf_cpu_time_max_percent");

// The walk budget: that share of every EHP_BUDGET_WINDOW_NS on each CPU,
// so the sampler, which runs in the timer's interrupt (an hrtimer-driven
// clock event is not throttled by the kernel for its handler's time),
// always leaves the interrupted tasks the rest, however slow the CPU or
// deep the stacks.
uint64_t WalkBudgetNs(uint32_t percent);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_WALK_BUDGET_H_
