// What a pprof consumer makes of a recorded profile, asked of the real `go
// tool pprof`: the profiled executable is the main binary (first mapping:
// pprof titles the profile with it), every mapping has the range, file
// offset and build-id it had in the process (so a server can symbolize it
// again), locations carry source lines, and a stripped binary's unnamed
// functions stay distinct (FILE+0xFDE_START) instead of one [unknown].
#include <regex>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RunEhprof;
using testing::TestdataPath;

class RecordPprof : public testing::RecordingTest {
 protected:
  // `go tool pprof ARGS` on a recording of `prog` (deep_recursion, depth 20).
  std::string RecordAndAsk(const std::string& prog, const std::string& args) {
    Record(prog);
    return Ask(args);
  }
  void Record(const std::string& prog) {
    auto r = RunEhprof({"record", "-F", "499", "-q", "-o", Profile(), "--", TestdataPath(prog), "1", "20"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
  }
  std::string Ask(const std::string& args) { return testing::GoToolPprof(args, {Profile()}, dir_); }
  std::string Profile() const { return dir_ + "/p.pb.gz"; }
};

TEST_F(RecordPprof, TheExecutableIsTheMainBinaryWithItsRangeOffsetAndBuildId) {
  const std::string raw = RecordAndAsk("deep_recursion", "-raw");
  const std::string build_id = testing::ShellOutput("readelf -n " + TestdataPath("deep_recursion"));
  std::smatch id;
  ASSERT_TRUE(std::regex_search(build_id, id, std::regex("Build ID: ([0-9a-f]+)"))) << build_id;
  // "1: 0xSTART/0xLIMIT/0xOFFSET /path/deep_recursion BUILDID [FN][FL][LN]"
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      raw, m, std::regex(R"(Mappings\n1: 0x([0-9a-f]+)/0x([0-9a-f]+)/0x([0-9a-f]+) (\S+) (\S+) (.*))")))
      << raw;
  EXPECT_EQ(m[4].str(), TestdataPath("deep_recursion"));
  EXPECT_LT(std::stoull(m[1].str(), nullptr, 16), std::stoull(m[2].str(), nullptr, 16));
  EXPECT_GT(std::stoull(m[3].str(), nullptr, 16), 0u);  // its text, not its first page
  EXPECT_EQ(m[5].str(), id[1].str());
  EXPECT_NE(m[6].str().find("[LN]"), std::string::npos) << m[6];
  // The kernel, when a sample had kernel frames, is a mapping too, but
  // never the first (asserted above: the first is the executable).
}

TEST_F(RecordPprof, LocationsCarrySourceLines) {
  const std::string top = RecordAndAsk("deep_recursion", "-top -lines");
  EXPECT_NE(top.find("File: deep_recursion"), std::string::npos) << top;
  EXPECT_TRUE(std::regex_search(top, std::regex(R"(recurse_leaf \S*deep_recursion\.c:\d+)"))) << top;
  EXPECT_TRUE(std::regex_search(top, std::regex(R"(recurse \S*deep_recursion\.c:\d+)"))) << top;
}

// The line of testdata/inline_work.c marked HOT: where its samples are.
int HotLine() {
  std::istringstream src(testing::ReadFile(testing::SourcePath("testdata/inline_work.c")));
  std::string line;
  for (int n = 1; std::getline(src, line); ++n) {
    if (line.find("/* HOT */") != std::string::npos) return n;
  }
  return 0;
}

// An inlined function's samples keep its own file:line (pprof -lines marks
// the frame "(inline)") and -list shows them beside the source text.
TEST_F(RecordPprof, ListShowsTheInlinedFunctionsSourceLinesWithSamples) {
  const int hot = HotLine();
  ASSERT_GT(hot, 0);
  Record("inline_work");
  // Counted in samples (the default, cpu nanoseconds, prints as "176.35ms").
  const std::string top = Ask("-sample_index=samples -lines -top");
  // "  88 98.88% 98.88%  88 98.88%  spin_inlined /…/inline_work.c:13 (inline)"
  std::smatch m;
  ASSERT_TRUE(std::regex_search(
      top, m, std::regex(absl::StrCat(R"((\d+) +[\d.]+% +[\d.]+% +\d+ +[\d.]+% +spin_inlined )",
                                      R"(\S*/testdata/inline_work\.c:)", hot, R"( \(inline\))"))))
      << top;
  const uint64_t hot_samples = std::stoull(m[1].str());
  // 1 s at 499 Hz, nearly all of it here (fewer on CPUs other tests keep busy).
  EXPECT_GE(hot_samples, 40u) << top;
  EXPECT_TRUE(std::regex_search(top, std::regex(R"(work_outer \S*/testdata/inline_work\.c:\d+)")))
      << top;
  // -list reads the source file the profile names and puts each line's
  // samples beside it: "      88         88     13:  TD_SPIN(x, SPIN_CHUNK); /* HOT */".
  const std::string list = Ask("-sample_index=samples -list '^spin_inlined$'");
  EXPECT_TRUE(std::regex_search(list, std::regex(R"(ROUTINE =+ spin_inlined in \S*/testdata/inline_work\.c)")))
      << list;
  ASSERT_TRUE(std::regex_search(
      list, m, std::regex(absl::StrCat(R"(\n +(\d+) +(\d+) +)", hot, R"(:\s+TD_SPIN\(x, SPIN_CHUNK\); /\* HOT \*/)"))))
      << list;
  EXPECT_EQ(std::stoull(m[1].str()), hot_samples) << list;
}

TEST_F(RecordPprof, AStrippedBinarysFunctionsStayDistinct) {
  const std::string top = RecordAndAsk("deep_recursion.stripped", "-top -nodecount=50");
  auto leaf = testing::FindSymbol(TestdataPath("deep_recursion"), "recurse_leaf");
  auto rec = testing::FindSymbol(TestdataPath("deep_recursion"), "recurse");
  ASSERT_TRUE(leaf && rec);
  EXPECT_NE(top.find(absl::StrCat("deep_recursion.stripped+0x", absl::Hex(leaf->addr))),
            std::string::npos) << top;
  EXPECT_NE(top.find(absl::StrCat("deep_recursion.stripped+0x", absl::Hex(rec->addr))),
            std::string::npos) << top;
  EXPECT_EQ(top.find("[unknown]"), std::string::npos) << top;
}

}  // namespace
}  // namespace ehprof
