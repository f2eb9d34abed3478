// What the tests of PHP frames in `ehprof record` share
// (tests/record_php_priv_test.cc, tests/record_php_reference_priv_test.cc):
// recording a command with its source lines, and reading PHP frames back.
#ifndef EHPROF_TESTS_PHP_RECORD_SUPPORT_H_
#define EHPROF_TESTS_PHP_RECORD_SUPPORT_H_

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/srcline_perf_script.h"
#include "tests/test_support.h"

namespace ehprof::testing {

// A user PHP frame: its dso is its file (a .php script).
inline bool UserPhp(const SrclineFrame& f) { return absl::EndsWith(f.dso, ".php"); }
inline bool AnyPhp(const SrclineFrame& f) { return UserPhp(f) || f.dso == "[php]"; }

inline const SrclineFrame* LeafUserPhp(const SrclineSample& s) {
  for (const SrclineFrame& f : s.frames) {
    if (UserPhp(f)) return &f;
  }
  return nullptr;
}

// The frames' symbols from the first one named `from` on (leaf first).
inline std::vector<std::string> From(const SrclineSample& s, const std::string& from) {
  std::vector<std::string> out;
  for (const SrclineFrame& f : s.frames) {
    if (out.empty() && f.symbol != from) continue;
    out.push_back(f.symbol);
  }
  return out;
}

// Whether `names` appear in `frames` in this order (others between).
inline bool InOrder(const std::vector<std::string>& frames, const std::vector<std::string>& names) {
  size_t at = 0;
  for (const std::string& f : frames) {
    if (at < names.size() && f == names[at]) ++at;
  }
  return at == names.size();
}

// Records `command` (or, not a command, the processes its -p names).
inline std::vector<SrclineSample> Record(const std::string& command, bool run = true) {
  const std::string out = absl::StrCat(::testing::TempDir(), "/php.", getpid(), ".txt");
  const std::string cmd = absl::StrCat("timeout 120 ", EhprofBinary(), " record -F 499 -q --srcline -o ",
                                       out, run ? " -- " : " ", command, " 2>/dev/null");
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto samples = ParseSrclinePerfScript(ReadFile(out));
  std::remove(out.c_str());
  return samples;
}

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_PHP_RECORD_SUPPORT_H_
