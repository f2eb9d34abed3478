#include "agent/record/walk_budget.h"

#include <fstream>

#include "bpf/ehprof_abi.h"

namespace ehprof {

uint32_t PerfCpuTimeMaxPercent(const std::string& path) {
  std::ifstream in(path);
  int64_t percent = -1;
  if (!(in >> percent) || percent < 0 || percent > 100) return 25;
  return percent == 0 ? 100 : static_cast<uint32_t>(percent);
}

uint64_t WalkBudgetNs(uint32_t percent) { return EHP_BUDGET_WINDOW_NS / 100 * percent; }

}  // namespace ehprof
