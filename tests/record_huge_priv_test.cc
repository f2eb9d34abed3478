// A binary with a huge .eh_frame (testdata huge_ehframe: 400,000 FDEs, 4
// million rows): its table must load and serve walks from deep inside it,
// and a table too big for --table-memory must be reported, not break the
// recording.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::RunResult;
using testing::TestdataPath;

const std::vector<std::string> kFunctions = {"huge_leaf", "huge_inner", "huge_outer", "main",
                                             "_start"};
constexpr char kChain[] =
    "huge_leaf;huge_inner;huge_outer;main;libc.so.6;libc.so.6;_start";

class RecordHuge : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RequireRootForBpf()) GTEST_SKIP();
    dir_ = ::testing::TempDir() + "/huge." + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // Records huge_ehframe.stripped; the stacks of its samples, named with the
  // unstripped twin's symbols.
  std::map<std::string, size_t> Record(const std::vector<std::string>& options, RunResult* r) {
    const std::string out = dir_ + "/out.txt";
    std::vector<std::string> args = {"record", "-F", "499", "-q", "--format", "perf-script",
                                     "-o", out};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", TestdataPath("huge_ehframe.stripped"), "1.5"});
    *r = RunEhprof(args);
    return testing::UserChains(testing::ReadFile(out), TestdataPath("huge_ehframe.stripped"),
                               TestdataPath("huge_ehframe"), kFunctions);
  }

  std::string dir_;
};

std::string Describe(const std::map<std::string, size_t>& chains) {
  std::string s;
  for (const auto& [chain, n] : chains) s += "\n  " + std::to_string(n) + " " + chain;
  return s;
}

TEST_F(RecordHuge, StacksThroughTheHugeTableAreComplete) {
  RunResult r;
  const auto chains = Record({}, &r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  size_t in_leaf = 0;
  for (const auto& [chain, n] : chains) {
    if (chain.rfind("huge_leaf", 0) == 0) in_leaf += n;
  }
  const size_t complete = chains.count(kChain) ? chains.at(kChain) : 0;
  std::printf("%zu of %zu samples in huge_leaf have the whole chain\n", complete, in_leaf);
  EXPECT_GE(in_leaf, 100u) << Describe(chains) << "\n" << r.err;
  EXPECT_GE(complete, in_leaf * 95 / 100) << Describe(chains) << "\n" << r.err;
  EXPECT_EQ(r.err.find("warning"), std::string::npos) << r.err;
}

// 1 MB holds a fraction of the 12.6 MB table: the file is named in a
// warning, the profile is still written, and no stack goes wrong (without
// the table, walks stop in huge_ehframe's first frame).
TEST_F(RecordHuge, TableTooBigForTableMemoryIsReported) {
  RunResult r;
  const auto chains = Record({"--table-memory", "1"}, &r);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("huge_ehframe.stripped: the BPF table maps are full"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("raise --table-memory"), std::string::npos) << r.err;
  size_t total = 0, wrong = 0;
  for (const auto& [chain, n] : chains) {
    total += n;
    if (chain.find(';') != std::string::npos && chain != kChain) wrong += n;
  }
  EXPECT_GE(total, 100u) << Describe(chains);
  // The frame-pointer fallback may find nothing, but never a made-up caller.
  EXPECT_LE(wrong, total / 20) << Describe(chains);
}

}  // namespace
}  // namespace ehprof
