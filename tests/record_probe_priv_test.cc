// ehprof record -e uprobe:/uretprobe:/usdt:/tracepoint:: the stacks at every
// hit, walked with CFI, on a stripped -O2 -fomit-frame-pointer program
// whose counted_leaf runs exactly N times from site_one and M times from
// site_two (and fires the USDT probe ehprof_test:leaf each time).
#include <unistd.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::TestdataPath;

constexpr int kN = 1000, kM = 500;
const char kSiteOne[] = "counted_leaf;site_one;run_calls;main;libc.so.6;libc.so.6;_start";
const char kSiteTwo[] = "counted_leaf;site_two;run_calls;main;libc.so.6;libc.so.6;_start";

class RecordProbe : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RequireRootForBpf()) GTEST_SKIP();
    dir_ = ::testing::TempDir() + "/probe." + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Chains of every hit of `event` on `prog` (a 300 ms pause first: the
  // process is known before its first call), by their user frames.
  std::map<std::string, size_t> Hits(const std::string& event, const std::string& prog) {
    const std::string out = dir_ + "/hits.txt";
    auto r = RunEhprof({"record", "-e", event, "-q", "--format", "perf-script", "-o", out, "--", prog,
                        std::to_string(kN), std::to_string(kM), "300"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    text_ = testing::ReadFile(out);
    return testing::UserChains(text_, prog, TestdataPath("probe_calls"),
                               {"counted_leaf", "site_one", "site_two", "run_calls", "main", "_start"});
  }

  std::string Dump(const std::map<std::string, size_t>& chains) {
    std::ostringstream o;
    for (const auto& [c, n] : chains) o << n << " " << c << "\n";
    return o.str() + text_.substr(0, 2000);
  }

  std::string dir_, text_;
};

TEST_F(RecordProbe, UprobeByAddressOnAStrippedBinaryCountsEveryCallWithItsFullStack) {
  const auto leaf = testing::FindSymbol(TestdataPath("probe_calls"), "counted_leaf");
  ASSERT_TRUE(leaf);
  const std::string prog = TestdataPath("probe_calls.stripped");
  const auto chains = Hits(absl::StrCat("uprobe:", prog, ":0x", absl::Hex(leaf->addr)), prog);
  EXPECT_EQ(chains.size(), 2u) << Dump(chains);
  EXPECT_EQ(chains.count(kSiteOne) ? chains.at(kSiteOne) : 0, size_t{kN}) << Dump(chains);
  EXPECT_EQ(chains.count(kSiteTwo) ? chains.at(kSiteTwo) : 0, size_t{kM}) << Dump(chains);
  EXPECT_NE(text_.find(" uprobe:"), std::string::npos);
}

TEST_F(RecordProbe, UprobeBySymbolAndUretprobe) {
  const std::string prog = TestdataPath("probe_calls");
  auto chains = Hits("uprobe:" + prog + ":counted_leaf", prog);
  EXPECT_EQ(chains[kSiteOne], size_t{kN}) << Dump(chains);
  EXPECT_EQ(chains[kSiteTwo], size_t{kM}) << Dump(chains);
  // At the return the leaf has gone: its caller is where the pc is.
  chains = Hits("uretprobe:" + prog + ":counted_leaf", prog);
  EXPECT_EQ(chains["site_one;run_calls;main;libc.so.6;libc.so.6;_start"], size_t{kN}) << Dump(chains);
  EXPECT_EQ(chains["site_two;run_calls;main;libc.so.6;libc.so.6;_start"], size_t{kM}) << Dump(chains);
}

TEST_F(RecordProbe, UsdtProbeCountsEveryFiringWithItsFullStack) {
  const std::string prog = TestdataPath("probe_calls");
  const auto chains = Hits("usdt:" + prog + ":ehprof_test:leaf", prog);
  EXPECT_EQ(chains.size(), 2u) << Dump(chains);
  EXPECT_EQ(chains.count(kSiteOne) ? chains.at(kSiteOne) : 0, size_t{kN}) << Dump(chains);
  EXPECT_EQ(chains.count(kSiteTwo) ? chains.at(kSiteTwo) : 0, size_t{kM}) << Dump(chains);
}

TEST_F(RecordProbe, TracepointHitsCarryTheUserStackThatEnteredTheKernel) {
  // probe_calls writes its last line with one write(2) to stderr.
  const std::string prog = TestdataPath("probe_calls");
  const auto chains = Hits("tracepoint:syscalls:sys_enter_write", prog);
  size_t from_main = 0;
  for (const auto& [chain, n] : chains) {
    if (chain.find(";main;libc.so.6;libc.so.6;_start") != std::string::npos) from_main += n;
  }
  EXPECT_GE(from_main, 1u) << Dump(chains);
}

// kprobe:FUNC attaches where the kernel has kprobes; this machine type's
// kernel is built without them, which must be said plainly.
TEST_F(RecordProbe, KprobeWorksOrSaysTheKernelHasNone) {
  const std::string out = dir_ + "/k.txt";
  auto r = RunEhprof({"record", "-q", "-e", "kprobe:ksys_write", "--format", "perf-script", "-o", out, "--",
                      TestdataPath("probe_calls"), "1", "1"});
  if (std::filesystem::exists("/sys/bus/event_source/devices/kprobe")) {
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // probe_calls writes its last line with write(2).
    EXPECT_NE(testing::ReadFile(out).find("kprobe:ksys_write"), std::string::npos);
  } else {
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find("no kprobes"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("kprobe:ksys_write"), std::string::npos) << r.err;
  }
}

TEST_F(RecordProbe, BadProbesAreUsageOrNamedErrors) {
  auto r = RunEhprof({"record", "-e", "uprobe:relative/path:f", "-a"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("absolute"), std::string::npos) << r.err;
  r = RunEhprof({"record", "-q", "-e", "uprobe:" + TestdataPath("probe_calls") + ":no_such_function", "-o",
                 dir_ + "/x.txt", "--", TestdataPath("probe_calls"), "1", "1"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no_such_function"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ehprof
