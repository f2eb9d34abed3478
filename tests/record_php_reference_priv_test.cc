// PHP frames in `ehprof record` judged against references outside the
// walk: php-excimer's names for the same process at the same time, and a
// walk through execute_ex's cold part (a range of its own in Debian's
// php8.2, found from the binary: agent/php/php_vm_parts.h).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/php_record_support.h"
#include "tests/srcline_perf_script.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::From;
using testing::InOrder;
using testing::LeafUserPhp;
using testing::Record;
using testing::SrclineFrame;
using testing::SrclineSample;

// The walk through execute_ex's cold part (a range of its own in Debian's
// php8.2, found from the binary): handler() runs under zend_error, which
// the cold part calls for utf8_encode's deprecation; below it, caller()
// and the script's frames, at their lines, down to _start.
TEST(RecordPhp, Php82ThroughExecuteExCold) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  if (access("/usr/bin/php8.2", X_OK) != 0) GTEST_SKIP() << "/usr/bin/php8.2 is not installed (php8.2-cli)";
  const std::string script = testing::SourcePath("testdata/php/cold.php");
  const auto samples = Record(absl::StrCat("/usr/bin/php8.2 ", script, " 3"));
  const int call_line = testing::SourceLineWith("testdata/php/cold.php", "// call line");
  size_t judged = 0, whole = 0;
  std::string bad;
  for (const SrclineSample& s : samples) {
    const SrclineFrame* leaf = LeafUserPhp(s);
    if (!leaf || leaf->symbol != "handler" || s.frames.back().symbol != "_start") continue;
    ++judged;
    const auto rest = From(s, "handler");
    size_t at = 0;
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (s.frames[i].symbol == "caller") at = i;
    }
    const bool ordered = InOrder(rest, {"handler", "execute_ex", "zend_error", "caller", script, "_start"}) &&
                         at && s.frames[at].line == call_line;
    whole += ordered;
    if (!ordered && bad.empty()) bad = absl::StrJoin(rest, ";");
  }
  ASSERT_GE(judged, 100u) << "too few samples in handler()";
  EXPECT_GE(whole * 100, judged * 98) << whole << " of " << judged << "; first: " << bad;
}

// Names as php-excimer gives them, on the same process at the same time:
// mix.php's instance method (Mix::w10), static method (Mix::w9), closure
// and plain functions. Excimer 1.0.4 names a closure
// "{closure:FILE(LINE)}", ehprof "{closure}" in FILE (its frame carries the
// file and line): a closure of excimer's is taken as "{closure}" once its
// file is the script. Every user function excimer saw in at least 1 % of
// its samples is a leaf ehprof names alike, and no ehprof leaf of 2 % is a
// name excimer never gave.
TEST(RecordPhp, Php82NamesAsExcimer) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  if (access("/usr/bin/php8.2", X_OK) != 0) GTEST_SKIP() << "/usr/bin/php8.2 is not installed (php8.2-cli)";
  if (std::system("/usr/bin/php8.2 -m | grep -qx excimer") != 0) GTEST_SKIP() << "php-excimer is not installed";
  const std::string out = absl::StrCat(::testing::TempDir(), "/excimer.", getpid(), ".txt");
  const std::string script = testing::SourcePath("testdata/php/mix.php");
  const auto samples = Record(absl::StrCat("env EXCIMER_OUT=", out, " /usr/bin/php8.2 ", script, " 3"));
  std::map<std::string, size_t> theirs, ours;
  size_t their_total = 0;
  const std::vector<std::string> lines = absl::StrSplit(testing::ReadFile(out), '\n', absl::SkipEmpty());
  for (const std::string& line : lines) {
    const size_t sp = line.rfind(' ');
    if (sp == std::string::npos) continue;
    const std::vector<std::string> stack = absl::StrSplit(line.substr(0, sp), ';', absl::SkipEmpty());
    const size_t n = std::strtoul(line.c_str() + sp + 1, nullptr, 10);
    if (stack.empty()) continue;
    std::string leaf = stack.back();
    if (absl::StartsWith(leaf, "{closure:")) {
      EXPECT_TRUE(absl::StartsWith(leaf, absl::StrCat("{closure:", script, "("))) << leaf;
      leaf = "{closure}";
    }
    theirs[leaf] += n;
    their_total += n;
  }
  std::remove(out.c_str());
  size_t our_total = 0;
  for (const SrclineSample& s : samples) {
    if (const SrclineFrame* leaf = LeafUserPhp(s)) {
      ++ours[leaf->symbol];
      ++our_total;
    }
  }
  ASSERT_GE(their_total, 500u);
  for (const char* name : {"Mix::w10", "Mix::w9", "{closure}", "w5"}) {
    EXPECT_GT(theirs[name], 0u) << name << " not in excimer's stacks";
  }
  for (const auto& [name, n] : theirs) {
    if (n * 100 < their_total) continue;
    EXPECT_GT(ours[name], 0u) << "excimer's " << name << " (" << n << " of " << their_total << ") not an ehprof leaf";
  }
  // ehprof's leaves of 2 % or more are excimer's names too. A rarer one may
  // fall in one profiler's samples and not in the other's: jitter's (7 of
  // ehprof's and none of excimer's in one CI run), run_mix's own loop
  // (about 0.4 % of either's samples; CI once had 12 of ehprof's ~1,100, over
  // 1 %, and none of excimer's).
  for (const auto& [name, n] : ours) {
    if (n * 50 < our_total) continue;
    EXPECT_TRUE(theirs.contains(name)) << "ehprof's leaf " << name << " (" << n << ") is no excimer name";
  }
}

}  // namespace
}  // namespace ehprof
