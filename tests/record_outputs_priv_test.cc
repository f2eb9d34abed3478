// Several -o on one `ehprof record`: every format written from the one
// recording and symbolization, so they agree sample for sample; a file that
// cannot be written is found before sampling, and one whose write fails
// after it sends its profile to /tmp.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::FoldedSamples;
using testing::ReadFile;
using testing::RunEhprof;
using testing::TestdataPath;

using RecordOutputs = testing::RecordingTest;

// perf-script samples: one header line each (a line not starting with a tab).
size_t PerfScriptSamples(const std::string& text) {
  size_t n = 0;
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    if (text[at] != '\t' && text[at] != '\n') ++n;
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return n;
}

TEST_F(RecordOutputs, EveryFormatFromOneRecording) {
  const std::string d = dir_ + "/p";
  // Standard output too: the perf-script text of the same samples.
  // (In a subshell: ShellOutput sends stderr to stdout after it.)
  const std::string stdout_text = testing::ShellOutput(
      "(" + testing::EhprofBinary() + " record -F 499 -q -o " + d + ".folded -o " + d + ".pb.gz -o " +
      d + ".svg -o " + d + ".perf-script -o - -- " + TestdataPath("deep_recursion") + " 1 8 2>" + d +
      ".err)");
  const std::string err = ReadFile(d + ".err");
  const size_t folded = FoldedSamples(d + ".folded");
  EXPECT_GE(folded, 200u) << err;
  EXPECT_EQ(PerfScriptSamples(ReadFile(d + ".perf-script")), folded);
  EXPECT_EQ(PerfScriptSamples(stdout_text), folded);
  const std::string svg = ReadFile(d + ".svg");
  EXPECT_NE(svg.find("<svg"), std::string::npos);
  EXPECT_NE(svg.find("recurse_leaf"), std::string::npos);
  const std::string pprof = ReadFile(d + ".pb.gz");
  ASSERT_GE(pprof.size(), 2u);
  EXPECT_EQ(pprof.substr(0, 2), "\x1f\x8b");  // gzip
  // One summary names them all, each with its format.
  EXPECT_TRUE(std::regex_search(
      err, std::regex("ehprof: wrote \\S+p\\.folded \\(folded\\), \\S+p\\.pb\\.gz \\(pprof\\), "
                      "\\S+p\\.svg \\(svg\\), \\S+p\\.perf-script \\(perf-script\\), standard output "
                      "\\(perf-script\\)\n")))
      << err;
}

// --wall sums each thread on its own in folded and SVG (comm-pid/tid) but
// keeps the comm in perf-script (the tid is a field there); with both asked
// for, each gets its own view of the same samples.
TEST_F(RecordOutputs, WallGivesEachFormatItsView) {
  const std::string d = dir_ + "/w";
  auto r = RunEhprof({"record", "--wall", "-F", "499", "-q", "-o", d + ".folded", "-o", d + ".perf-script",
                      "--", TestdataPath("threads"), "0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string folded = ReadFile(d + ".folded");
  EXPECT_TRUE(std::regex_search(folded, std::regex(R"((^|\n)threads-\d+/\d+;)"))) << folded.substr(0, 2000);
  EXPECT_FALSE(std::regex_search(folded, std::regex(R"((^|\n)threads;)"))) << folded.substr(0, 2000);
  const std::string script = ReadFile(d + ".perf-script");
  EXPECT_TRUE(std::regex_search(script, std::regex(R"((^|\n)threads +\d+ \[\d+\] )"))) << script.substr(0, 2000);
  EXPECT_EQ(script.find("threads-"), std::string::npos);
  EXPECT_NE(script.find(" offcpu-time: "), std::string::npos);
}

// Found before the command runs, not after the recording: the command is
// not started and nothing is written.
TEST_F(RecordOutputs, AnUnwritableFileFailsBeforeSampling) {
  const std::string good = dir_ + "/good.folded", ran = dir_ + "/ran";
  auto r = RunEhprof({"record", "-F", "499", "-q", "-o", good, "-o", "/nonexistent-dir/x.folded", "--", "/bin/sh",
                      "-c", "touch " + ran});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("/nonexistent-dir/x.folded"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("ehprof: wrote"), std::string::npos) << r.err;
  EXPECT_NE(access(ran.c_str(), F_OK), 0) << "the command ran";
  EXPECT_NE(access(good.c_str(), F_OK), 0);
  // No temporary file of the good -o left beside it either.
  size_t left = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) left += e.path().filename() != "ran";
  EXPECT_EQ(left, 0u);
}

// A write that fails after sampling (ENOSPC: /dev/full) loses nothing: the
// profile goes to a file of its own in /tmp, and says so.
TEST_F(RecordOutputs, AFailedWriteSendsTheProfileToTmp) {
  auto r = RunEhprof({"record", "-F", "499", "-q", "-o", "/dev/full", "--format", "folded", "--",
                      TestdataPath("plt_calls"), "0.5"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.err, m, std::regex("the profile was written to (\\S+) instead"))) << r.err;
  EXPECT_GE(FoldedSamples(m[1].str()), 50u) << r.err;
  std::remove(m[1].str().c_str());
}

// The reports beside the profile, through the same safe path: written
// whole, private, where they were asked for.
TEST_F(RecordOutputs, ReportsAreWrittenPrivate) {
  const std::string d = dir_ + "/r";
  auto r = RunEhprof({"record", "-F", "499", "-q", "--unwinder", "both", "--compare", d + ".compare.txt",
                      "--diff-folded", d + ".diff.folded", "--verify=5", "--verify-report", d + ".verify.txt", "-o",
                      d + ".folded", "--", TestdataPath("plt_calls"), "0.4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* ext : {".compare.txt", ".diff.folded", ".verify.txt"}) {
    struct stat st;
    ASSERT_EQ(lstat((d + ext).c_str(), &st), 0) << ext;
    EXPECT_TRUE(S_ISREG(st.st_mode)) << ext;
    EXPECT_EQ(st.st_mode & 07777, 0600u) << ext;
    EXPECT_GT(st.st_size, 0) << ext;
  }
  EXPECT_NE(ReadFile(d + ".diff.folded").find("plt_inner"), std::string::npos);
  size_t left = 0;
  for (const auto& e : std::filesystem::directory_iterator(dir_)) {
    left += e.path().filename().string().find(".tmp.") != std::string::npos;
  }
  EXPECT_EQ(left, 0u) << "a temporary file was left";
}

}  // namespace
}  // namespace ehprof
