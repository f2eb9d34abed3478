// What a pprof consumer makes of a recorded profile, asked of the real `go
// tool pprof`: the profiled executable is the main binary (first mapping:
// pprof titles the profile with it), every mapping has the range, file
// offset and build-id it had in the process (so a server can symbolize it
// again), locations carry source lines, and a stripped binary's unnamed
// functions stay distinct (FILE+0xFDE_START) instead of one [unknown].
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::TestdataPath;


class RecordPprof : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RequireRootForBpf()) GTEST_SKIP();
    dir_ = ::testing::TempDir() + "/pprof." + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }

  // `go tool pprof ARGS` on a recording of `prog` (deep_recursion, depth 20).
  std::string RecordAndAsk(const std::string& prog, const std::string& args) {
    const std::string out = dir_ + "/p.pb.gz";
    auto r = RunEhprof({"record", "-F", "499", "-q", "-o", out, "--", TestdataPath(prog), "1", "20"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return testing::GoToolPprof(args, {out}, dir_);
  }

  std::string dir_;
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
