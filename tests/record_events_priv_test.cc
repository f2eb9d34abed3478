// -e counters: hardware events where there is a PMU, a clear error where
// there is none (this machine type: a VM without one), software counters
// everywhere, and -c N for a sample every N events.
#include <unistd.h>

#include <filesystem>
#include <regex>
#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::TestdataPath;

class RecordEvents : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RequireRootForBpf()) GTEST_SKIP();
    dir_ = ::testing::TempDir() + "/events." + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string dir_;
};

bool HasCyclesPmu() { return std::filesystem::exists("/sys/bus/event_source/devices/cpu/events/cpu-cycles"); }

TEST_F(RecordEvents, AHardwareCounterWithoutAPmuIsNamedWithTheWayOut) {
  if (HasCyclesPmu()) GTEST_SKIP() << "this machine has a PMU: the error cannot happen here";
  for (const char* event : {"cycles", "instructions", "cache-misses"}) {
    auto r = RunEhprof({"record", "-q", "-e", event, "-o", dir_ + "/x.txt", "--", TestdataPath("probe_calls"), "1", "1"});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(std::string("-e ") + event), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("no hardware PMU"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("cpu-clock"), std::string::npos) << r.err;
  }
}

// Where there is a PMU, hardware counters sample and unwind like cpu-clock;
// this machine type has none, so the test names what is missing.
TEST_F(RecordEvents, HardwareCountersSampleFullStacksWhereThereIsAPmu) {
  if (!HasCyclesPmu()) {
    GTEST_SKIP() << "no hardware PMU (/sys/bus/event_source/devices/cpu/events/cpu-cycles is missing)";
  }
  for (const char* event : {"cycles", "instructions"}) {
    const std::string out = dir_ + "/hw.folded";
    auto r = RunEhprof({"record", "-q", "-e", event, "-c", "1000000", "-o", out, "--",
                        TestdataPath("deep_recursion"), "0.5", "12"});
    ASSERT_EQ(r.exit_code, 0) << event << ": " << r.err;
    const std::string folded = testing::ReadFile(out);
    EXPECT_NE(folded.find("deep_recursion;_start;"), std::string::npos) << event << "\n" << folded.substr(0, 1500);
    EXPECT_NE(folded.find("recurse"), std::string::npos) << event << "\n" << folded.substr(0, 1500);
  }
}

TEST_F(RecordEvents, ASoftwareCounterSampledEveryNthEvent) {
  // page-faults: the program's start-up touches pages; every 10th fault a sample.
  const std::string out = dir_ + "/pf.txt";
  auto r = RunEhprof({"record", "-q", "-e", "page-faults", "-c", "10", "--format", "perf-script", "-o", out,
                      "--", TestdataPath("probe_calls"), "10", "10", "100"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = testing::ReadFile(out);
  // "comm tid [cpu] time:         10 page-faults: "
  EXPECT_TRUE(std::regex_search(text, std::regex(R"(: +10 page-faults: \n)"))) << text.substr(0, 1500);
  r = RunEhprof({"record", "-e", "page-faults", "-c", "10", "-F", "99", "-a"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
}

// A perf user's command line: long options, -F max, -g/--call-graph taken
// as no-ops, -D, -o - for standard output.
TEST_F(RecordEvents, PerfStyleCommandLine) {
  const std::string cmd = testing::EhprofBinary() +
                          " record --freq max -g --call-graph=dwarf --event cpu-clock -D 200 --quiet "
                          "--format folded --output - -- " +
                          TestdataPath("deep_recursion") + " 0.6 12 2>/dev/null";
  const std::string folded = testing::ShellOutput(cmd);
  EXPECT_NE(folded.find("deep_recursion;_start;"), std::string::npos) << folded.substr(0, 1500);
  EXPECT_NE(folded.find("recurse"), std::string::npos) << folded.substr(0, 1500);
  const std::string out = dir_ + "/long.txt";
  auto r = RunEhprof({"record", "--all-cpus", "--duration", "0.2", "--cpu", "0", "--output", out});
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

}  // namespace
}  // namespace ehprof
