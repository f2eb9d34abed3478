// The walk time budget ehprof sets itself (agent/record/walk_budget.h).
#include "agent/record/walk_budget.h"

#include <unistd.h>

#include <fstream>
#include <string>

#include "gtest/gtest.h"

namespace ehprof {
namespace {

std::string WriteSysctl(const std::string& text) {
  const std::string path = ::testing::TempDir() + "/perf_cpu_time_max_percent." + std::to_string(getpid());
  std::ofstream(path) << text;
  return path;
}

TEST(WalkBudget, TheKernelsShareOfEachWindow) {
  EXPECT_EQ(PerfCpuTimeMaxPercent(WriteSysctl("25\n")), 25u);
  EXPECT_EQ(PerfCpuTimeMaxPercent(WriteSysctl("7\n")), 7u);
  // 0 is the kernel's "no limit": the whole window, never more.
  EXPECT_EQ(PerfCpuTimeMaxPercent(WriteSysctl("0\n")), 100u);
  // Unreadable or out of range: the kernel's default.
  EXPECT_EQ(PerfCpuTimeMaxPercent(WriteSysctl("abc\n")), 25u);
  EXPECT_EQ(PerfCpuTimeMaxPercent(WriteSysctl("101\n")), 25u);
  EXPECT_EQ(PerfCpuTimeMaxPercent("/nonexistent/perf_cpu_time_max_percent"), 25u);
  // 25 ms of every 100 ms on each CPU.
  EXPECT_EQ(WalkBudgetNs(25), 25000000u);
  EXPECT_EQ(WalkBudgetNs(100), 100000000u);
}

}  // namespace
}  // namespace ehprof
