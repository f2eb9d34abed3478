// The walk time budget ehprof sets itself (agent/record/walk_budget.h).
#include "agent/record/walk_budget.h"

#include <linux/perf_event.h>
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

TEST(WalkBudget, TheKernelsShareOfThePeriod) {
  EXPECT_EQ(PerfCpuTimeMaxPercent(WriteSysctl("25\n")), 25u);
  EXPECT_EQ(PerfCpuTimeMaxPercent(WriteSysctl("7\n")), 7u);
  // 0 is the kernel's "no limit": the whole period, never more.
  EXPECT_EQ(PerfCpuTimeMaxPercent(WriteSysctl("0\n")), 100u);
  // Unreadable or out of range: the kernel's default.
  EXPECT_EQ(PerfCpuTimeMaxPercent(WriteSysctl("abc\n")), 25u);
  EXPECT_EQ(PerfCpuTimeMaxPercent(WriteSysctl("101\n")), 25u);
  EXPECT_EQ(PerfCpuTimeMaxPercent("/nonexistent/perf_cpu_time_max_percent"), 25u);
  // 99 Hz: 10.1 ms a period, a quarter of it.
  EXPECT_EQ(WalkBudgetNs(SamplingIntervalNs(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, 99), 25), 2525250u);
}

TEST(WalkBudget, IntervalOfEachEventKind) {
  // -F: one period.
  EXPECT_EQ(SamplingIntervalNs(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 0, 1000), 1000000u);
  // -c of a clock counts nanoseconds.
  EXPECT_EQ(SamplingIntervalNs(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, 250000, 99), 250000u);
  EXPECT_EQ(SamplingIntervalNs(PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, 300000, 99), 300000u);
  // -c of a counter: its time per count is unknown; -F's period stands in.
  EXPECT_EQ(SamplingIntervalNs(PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, 1000000, 99), 10101010u);
}

}  // namespace
}  // namespace ehprof
