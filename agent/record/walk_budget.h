// How long one event's stack walks may take in the kernel
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

// The walk budget of a sampling interval: that share of it, so a sample's
// program in the timer's interrupt always leaves the interrupted task most
// of its period, however slow the CPU (an hrtimer-driven clock event is
// not throttled by the kernel for its handler's time). interval_ns is the
// sampling period in nanoseconds.
uint64_t WalkBudgetNs(uint64_t interval_ns, uint32_t percent);

// The sampling interval of a session, in nanoseconds: -c's count for the
// clock events (counted in ns), else one -F period (also the estimate for
// counters, whose time per count is unknown, and for probes and off-CPU
// events, which have no period).
uint64_t SamplingIntervalNs(uint32_t event_type, uint64_t event_config, uint64_t sample_period,
                            uint64_t frequency_hz);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_WALK_BUDGET_H_
