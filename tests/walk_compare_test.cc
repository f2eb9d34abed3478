// The FP-vs-CFI comparison and the perf-script reader it uses offline.
#include "agent/verify/walk_compare.h"

#include <sstream>

#include "agent/output/output_perf_script.h"
#include "agent/output/perf_script_reader.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

ResolvedFrame User(uint64_t addr, const std::string& sym, const std::string& dso = "/bin/x") {
  ResolvedFrame f;
  f.addr = addr;
  f.symbol = sym;
  f.dso = dso;
  return f;
}

ResolvedSample Sample(std::vector<ResolvedFrame> frames) {
  ResolvedSample s;
  s.comm = "prog";
  s.tid = 7;
  s.frames = std::move(frames);
  return s;
}

TEST(WalkCompare, ClassifiesAgreeShorterAndWrong) {
  std::vector<ResolvedSample> cfi = {
      Sample({User(0x10, "leaf"), User(0x20, "mid"), User(0x30, "main")}),
      Sample({User(0x10, "leaf"), User(0x20, "mid"), User(0x30, "main")}),
      Sample({User(0x10, "leaf"), User(0x20, "mid"), User(0x30, "main")})};
  std::vector<ResolvedSample> fp = {
      Sample({User(0x10, "leaf"), User(0x20, "mid"), User(0x30, "main")}),
      Sample({User(0x10, "leaf")}),
      Sample({User(0x10, "leaf"), User(0x99, "garbage")})};
  CallSiteChecker checker;
  WalkComparison c = CompareWalks(cfi, fp, checker);
  EXPECT_EQ(c.samples, 3u);
  EXPECT_EQ(c.agree, 1u);
  EXPECT_EQ(c.fp_shorter, 1u);
  EXPECT_EQ(c.fp_wrong, 1u);
  EXPECT_EQ(c.per_function["mid (/bin/x)"].samples, 2u);
  // /bin/x is not a readable ELF: no frame can be shown to follow a call.
  EXPECT_EQ(c.fp_checked, 3u);
  EXPECT_EQ(c.fp_not_call_sites, 3u);
  std::ostringstream report;
  WriteComparisonReport(c, report);
  EXPECT_NE(report.str().find("FP agrees with CFI:"), std::string::npos);
}

TEST(WalkCompare, CallSitesAreCheckedInTheFileBytes) {
  // A real call site in a testdata program: the return address after
  // plt_outer's call to plt_inner, minus one.
  auto outer = testing::FindSymbol(testing::TestdataPath("plt_calls"), "plt_outer");
  ASSERT_TRUE(outer);
  CallSiteChecker checker;
  size_t call_sites = 0;
  for (uint64_t a = outer->addr; a < outer->addr + outer->size; ++a) {
    call_sites += checker.IsCallSite(testing::TestdataPath("plt_calls"), a);
  }
  EXPECT_GE(call_sites, 1u);
  EXPECT_LT(call_sites, outer->size / 4);
}

TEST(WalkCompare, DiffFoldedHasBothCounts) {
  std::vector<ResolvedSample> cfi = {Sample({User(0x10, "leaf"), User(0x30, "main")})};
  std::vector<ResolvedSample> fp = {Sample({User(0x10, "leaf")})};
  std::ostringstream out;
  ASSERT_TRUE(WriteDiffFolded(cfi, fp, out).ok());
  EXPECT_EQ(out.str(), "prog;leaf 1 0\nprog;main;leaf 0 1\n");
}

TEST(PerfScriptReader, ReadsBackWhatTheWriterWrites) {
  ResolvedFrame k;
  k.addr = 0xffffffff81000000;
  k.symbol = "do_syscall_64";
  k.dso = "[kernel.kallsyms]";
  k.kernel = true;
  std::vector<ResolvedSample> in = {
      Sample({k, User(0x1234, "operator new(unsigned long)", "/usr/lib/libstdc++.so.6"),
              User(0x10, "[unknown]", "[unknown]")})};
  in[0].comm = "Web Content";
  std::stringstream text;
  ASSERT_TRUE(WritePerfScript(in, text).ok());
  auto out = ReadPerfScript(text, "dump");
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ(out->size(), 1u);
  EXPECT_EQ((*out)[0].comm, "Web Content");
  EXPECT_EQ((*out)[0].tid, 7u);
  ASSERT_EQ((*out)[0].frames.size(), 3u);
  EXPECT_TRUE((*out)[0].frames[0].kernel);
  EXPECT_EQ((*out)[0].frames[1].symbol, "operator new(unsigned long)");
  EXPECT_EQ((*out)[0].frames[1].dso, "/usr/lib/libstdc++.so.6");
  EXPECT_EQ((*out)[0].frames[1].addr, 0x1234u);
}

TEST(PerfScriptReader, MalformedInputNamesTheLine) {
  std::istringstream text("prog 7\n\tnot-hex sym (dso)\n");
  auto out = ReadPerfScript(text, "dump.txt");
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("dump.txt:2"), std::string::npos);
}

}  // namespace
}  // namespace ehprof

namespace ehprof {
namespace {

TEST(PerfScriptReader, FrameWithoutSymbolKeepsItsDso) {
  // perf script -F ip,dso prints "ADDR (DSO)"; found by fuzz_perf_script.
  std::istringstream text("a 1\n\t1 (b)\n");
  auto out = ReadPerfScript(text, "dump");
  ASSERT_TRUE(out.ok()) << out.status();
  ASSERT_EQ((*out)[0].frames.size(), 1u);
  EXPECT_EQ((*out)[0].frames[0].symbol, "");
  EXPECT_EQ((*out)[0].frames[0].dso, "b");
}

}  // namespace
}  // namespace ehprof
