#include "symbolizer/perf_map.h"

#include "gtest/gtest.h"

namespace ehprof {
namespace {

TEST(PerfMap, FindsTheEntryCoveringAnAddress) {
  PerfMap m = PerfMap::Parse("7f0000001000 40 LazyCompile:~foo script.js:1\n"
                             "7f0000001040 20 bar\n");
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.Find(0x7f0000001000), "LazyCompile:~foo script.js:1");
  EXPECT_EQ(m.Find(0x7f000000103f), "LazyCompile:~foo script.js:1");
  EXPECT_EQ(m.Find(0x7f0000001050), "bar");
  EXPECT_EQ(m.Find(0x7f0000001060), std::nullopt);
  EXPECT_EQ(m.Find(0x1000), std::nullopt);
}

TEST(PerfMap, LaterEntriesWinForReplacedCode) {
  PerfMap m = PerfMap::Parse("1000 100 old\n1000 100 new\n");
  EXPECT_EQ(m.Find(0x1010), "new");
}

// HotSpot (-XX:+DumpPerfMapAtExit, jcmd PID Compiler.perfmap) writes both
// numbers as 0x and 16 digits.
TEST(PerfMap, ReadsTheJvmsZeroXSixteenDigits) {
  PerfMap m = PerfMap::Parse("0x00007f38b0ec7600 0x0000000000000178 long JvmWork.hotA(long)\n"
                             "0x000000000000100 0x10 x\n0x00000000000010000 0x10 seventeen\n");
  EXPECT_EQ(m.size(), 2u);
  EXPECT_EQ(m.bad_lines(), 1u);
  EXPECT_EQ(m.Find(0x7f38b0ec7700), "long JvmWork.hotA(long)");
}

TEST(PerfMap, BrokenLinesAreSkippedAndCounted) {
  PerfMap m = PerfMap::Parse("garbage\n1000 zz name\n1000 0 empty\n2000 10\n"
                             "ffffffffffffffff 10 wraps\n3000 10 ok\r\n12345678901234567 1 long\n");
  EXPECT_EQ(m.size(), 1u);
  EXPECT_EQ(m.bad_lines(), 6u);
  EXPECT_EQ(m.Find(0x3005), "ok");
}

// A JIT appends as it compiles: the new lines join the map, and replace
// code at the same addresses.
TEST(PerfMap, AppendedLinesJoinAndWin) {
  PerfMap m = PerfMap::Parse("3000 100 c\n1000 100 old\n");
  m.Append("2000 10 b\n1000 100 new\nbroken\n");
  EXPECT_EQ(m.size(), 4u);
  EXPECT_EQ(m.bad_lines(), 1u);
  EXPECT_EQ(m.Find(0x1010), "new");
  EXPECT_EQ(m.Find(0x2005), "b");
  EXPECT_EQ(m.Find(0x3005), "c");
  // Appended in pieces, the same as parsed at once.
  PerfMap whole = PerfMap::Parse("1000 100 a\n1040 10 b\n1000 100 c\n");
  PerfMap pieces = PerfMap::Parse("1000 100 a\n");
  pieces.Append("1040 10 b\n");
  pieces.Append("1000 100 c\n");
  for (uint64_t addr : {0x1000, 0x1045, 0x10ff, 0x1100}) EXPECT_EQ(pieces.Find(addr), whole.Find(addr)) << addr;
}

}  // namespace
}  // namespace ehprof
