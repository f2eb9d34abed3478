#include "agent/record/walk_budget.h"

#include <linux/perf_event.h>

#include <fstream>

namespace ehprof {

uint32_t PerfCpuTimeMaxPercent(const std::string& path) {
  std::ifstream in(path);
  int64_t percent = -1;
  if (!(in >> percent) || percent < 0 || percent > 100) return 25;
  return percent == 0 ? 100 : static_cast<uint32_t>(percent);
}

uint64_t WalkBudgetNs(uint64_t interval_ns, uint32_t percent) {
  return interval_ns / 100 * percent;
}

uint64_t SamplingIntervalNs(uint32_t event_type, uint64_t event_config, uint64_t sample_period,
                            uint64_t frequency_hz) {
  const bool clock = event_type == PERF_TYPE_SOFTWARE &&
                     (event_config == PERF_COUNT_SW_CPU_CLOCK || event_config == PERF_COUNT_SW_TASK_CLOCK);
  if (sample_period != 0 && clock) return sample_period;
  return 1000000000 / (frequency_hz ? frequency_hz : 1);
}

}  // namespace ehprof
