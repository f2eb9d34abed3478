// A process with thousands of executable mappings (testdata many_mappings:
// 3,000 extra mappings of its own first page), more than a process entry
// holds (EHP_MAX_MAPPINGS): ehprof must say so once, not once per refresh,
// and still walk the code that runs down to _start through libc.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>

#include "bpf/ehprof_abi.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::RunResult;
using testing::TestdataPath;

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(RecordManyMappings, OneWarningAndCompleteStacks) {
  if (!RequireRootForBpf()) GTEST_SKIP();
  static_assert(EHP_MAX_MAPPINGS < 3000, "many_mappings must exceed the limit");
  const std::string dir = ::testing::TempDir() + "/many_mappings." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string out = dir + "/out.txt";
  const std::string prog = TestdataPath("many_mappings.stripped");
  // 2 s: several mapping refreshes happen while it runs.
  RunResult r = RunEhprof({"record", "-F", "499", "-q", "--format", "perf-script", "-o", out,
                           "--", prog, "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Occurrences(r.err, "executable mappings, more than the"), 1u) << r.err;

  const auto chains = testing::UserChains(testing::ReadFile(out), prog,
                                          TestdataPath("many_mappings"),
                                          {"spin_inner", "spin_outer", "main", "_start"});
  const std::string want = "spin_inner;spin_outer;main;libc.so.6;libc.so.6;_start";
  size_t in_leaf = 0;
  std::string seen;
  for (const auto& [chain, n] : chains) {
    if (chain.rfind("spin_inner", 0) == 0) in_leaf += n;
    seen += "\n  " + std::to_string(n) + " " + chain;
  }
  const size_t complete = chains.count(want) ? chains.at(want) : 0;
  std::printf("%zu of %zu samples in spin_inner have the whole chain\n", complete, in_leaf);
  EXPECT_GE(in_leaf, 100u) << seen << "\n" << r.err;
  EXPECT_GE(complete, in_leaf * 95 / 100) << seen << "\n" << r.err;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ehprof
