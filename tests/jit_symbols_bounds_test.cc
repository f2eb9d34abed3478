// JitSymbols' bounds (agent/resolve/frame_locator.h): what is kept for all
// processes' perf maps is bounded in bytes as well as entries, and a line
// too long to be a name is skipped without losing the lines after it.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/resolve/frame_locator.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

// No such processes: the maps are read from the test's directory.
constexpr uint32_t kPidA = 4190021, kPidB = 4190022;

class JitSymbolsBounds : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/jit_bounds.", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string MapPath(uint32_t pid) const { return absl::StrCat(dir_, "/perf-", pid, ".map"); }
  void Write(uint32_t pid, const std::string& text) const { std::ofstream(MapPath(pid)) << text; }
  // n entries at 0x1000 + 0x10 i, each named `prefix` i padded to name_len.
  static std::string Entries(const std::string& prefix, int n, size_t name_len) {
    std::string text;
    for (int i = 0; i < n; ++i) {
      std::string name = absl::StrCat(prefix, i);
      name.resize(name_len, 'x');
      absl::StrAppend(&text, absl::Hex(0x1000 + 0x10 * i), " 10 ", name, "\n");
    }
    return text;
  }

  std::string dir_;
};

TEST_F(JitSymbolsBounds, BytesAreBoundedLeastRecentlyUsedFirst) {
  // Few entries with long names: the byte bound, not the entry bound, acts.
  Write(kPidA, Entries("a", 4, 1000));
  Write(kPidB, Entries("b", 4, 1000));
  Warnings warnings;
  JitSymbols jit({/*max_entries=*/1000, dir_, /*max_bytes=*/6000}, &warnings);
  EXPECT_EQ(jit.Frame(kPidA, 0x1004, true).symbol.substr(0, 2), "a0");
  const size_t one_map = jit.bytes();
  EXPECT_GE(one_map, 4000u);
  EXPECT_LE(one_map, 6000u);
  EXPECT_EQ(jit.Frame(kPidB, 0x1034, true).symbol.substr(0, 2), "b3");
  EXPECT_EQ(jit.processes(), 1u);  // A's map went for B's
  EXPECT_LE(jit.bytes(), 6000u);
  // Read again when needed.
  EXPECT_EQ(jit.Frame(kPidA, 0x1014, true).symbol.substr(0, 2), "a1");
  EXPECT_LE(jit.bytes(), 6000u);
  EXPECT_TRUE(warnings.Take().empty());
}

TEST_F(JitSymbolsBounds, OneMapPastTheByteBoundIsNotReadFurther) {
  // 64 entries of ~1 KiB against a 16 KiB bound: reading stops at the line
  // that reaches it; the lines after it name nothing, and later rounds read
  // no more of the file.
  Write(kPidA, Entries("a", 64, 1000));
  Warnings warnings;
  JitSymbols jit({1000, dir_, 16 << 10}, &warnings);
  EXPECT_EQ(jit.Frame(kPidA, 0x1004, true).symbol.substr(0, 2), "a0");
  const size_t kept = jit.entries();
  EXPECT_GE(kept, 14u);
  EXPECT_LE(kept, 17u);
  EXPECT_GE(jit.bytes(), 16u << 10);
  EXPECT_LT(jit.bytes(), (16u << 10) + 1100);
  EXPECT_EQ(jit.Frame(kPidA, 0x1000 + 0x10 * 40 + 4, true).symbol, "[unknown]");
  std::ofstream(MapPath(kPidA), std::ios::app) << Entries("late", 1, 10);
  jit.NextRound();
  EXPECT_EQ(jit.Frame(kPidA, 0x1004, true).symbol.substr(0, 2), "a0");
  EXPECT_EQ(jit.entries(), kept);
  EXPECT_TRUE(warnings.Take().empty());
}

TEST_F(JitSymbolsBounds, ALineLongerThanAChunkIsSkippedAndTheRestRead) {
  const std::string huge(3u << 20, 'z');  // 3 MiB: three chunks without a newline
  Write(kPidA, absl::StrCat("1000 10 before\n2000 10 ", huge, "\n3000 10 after\n"));
  Warnings warnings;
  JitSymbols jit({1000, dir_, SIZE_MAX}, &warnings);
  EXPECT_EQ(jit.Frame(kPidA, 0x1004, true).symbol, "before");
  EXPECT_EQ(jit.Frame(kPidA, 0x3004, true).symbol, "after");
  EXPECT_EQ(jit.Frame(kPidA, 0x2004, true).symbol, "[unknown]");
  EXPECT_EQ(jit.entries(), 2u);
  EXPECT_LT(jit.bytes(), 1000u);
  const std::vector<std::string> w = warnings.Take();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], absl::StrCat(MapPath(kPidA), " (pid ", kPidA, "): 1 malformed or overlong lines skipped"));
}

// A long line still being written (no newline yet) is neither kept nor
// counted until the JIT ends it; the lines after it are read when it is.
TEST_F(JitSymbolsBounds, ALongLineBeingWrittenIsWaitedFor) {
  Write(kPidA, absl::StrCat("1000 10 before\n2000 10 ", std::string(100 << 10, 'y')));
  Warnings warnings;
  JitSymbols jit({1000, dir_, SIZE_MAX}, &warnings);
  EXPECT_EQ(jit.Frame(kPidA, 0x1004, true).symbol, "before");
  EXPECT_EQ(jit.entries(), 1u);
  std::ofstream(MapPath(kPidA), std::ios::app) << "\n3000 10 after\n";
  jit.NextRound();
  EXPECT_EQ(jit.Frame(kPidA, 0x3004, true).symbol, "after");
  EXPECT_EQ(jit.Frame(kPidA, 0x2004, true).symbol, std::string(100 << 10, 'y'));
  EXPECT_TRUE(warnings.Take().empty());
}

}  // namespace
}  // namespace ehprof
