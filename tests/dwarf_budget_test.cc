// The budget on compressed DWARF expanded in memory, per file and for all
// files with open sessions together (what `ehprof record -a` as root holds
// of other users' debug sections): a file past what is left is named from
// its symbol tables, with a warning naming it and the limit; closing a
// session gives its share back.
#include <gelf.h>
#include <libelf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "symbolizer/dwarf_symbolizer.h"
#include "symbolizer/safe_debuginfo.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

namespace fs = std::filesystem;

uint64_t ExpandedOf(const std::string& path) {
  elf_version(EV_CURRENT);
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << path;
  Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
  const uint64_t n = elf ? ExpandedDwarfBytes(elf) : 0;
  elf_end(elf);
  ::close(fd);
  return n;
}

// nm's address of `symbol` in `path` (0: none).
uint64_t SymbolAddress(const std::string& path, const std::string& symbol) {
  const std::string cmd = absl::StrCat("nm ", path);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return 0;
  char line[512];
  uint64_t addr = 0;
  while (std::fgets(line, sizeof(line), p) != nullptr) {
    char type = 0;
    char name[256] = {};
    unsigned long long a = 0;
    if (std::sscanf(line, "%llx %c %255s", &a, &type, name) == 3 && symbol == name) addr = a;
  }
  ::pclose(p);
  return addr;
}

class DwarfBudget : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/dwarf_budget.", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  // A copy of testdata's inline_work (-O2 -g) with its DWARF zlib-compressed.
  std::string Compressed(const std::string& name) {
    const std::string out = absl::StrCat(dir_, "/", name);
    const std::string cmd = absl::StrCat("objcopy --compress-debug-sections=zlib ",
                                         testing::TestdataPath("inline_work"), " ", out);
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    return out;
  }
  std::string dir_;
};

TEST_F(DwarfBudget, AFilePastWhatIsLeftOfTheTotalIsNamedFromItsSymbolTables) {
  const std::string a = Compressed("a"), b = Compressed("b"), c = Compressed("c");
  const uint64_t each = ExpandedOf(a);
  ASSERT_GT(each, 1024u) << "inline_work has no compressed DWARF to expand";

  Warnings sink;
  DwarfSymbolizer symbols(&sink);
  symbols.SetMaxExpandedDwarfTotal(each + each / 2);  // room for one file, not two
  EXPECT_TRUE(symbols.HasDwarf(a));
  EXPECT_EQ(symbols.expanded_dwarf_open(), each);
  EXPECT_FALSE(symbols.HasDwarf(b));
  EXPECT_EQ(symbols.expanded_dwarf_open(), each);
  const std::vector<std::string> warnings = sink.Take();
  ASSERT_EQ(warnings.size(), 1u) << absl::StrJoin(warnings, "\n");
  EXPECT_TRUE(absl::StartsWith(warnings[0], b + ": DWARF not read: its compressed debug sections would expand to"))
      << warnings[0];
  EXPECT_TRUE(absl::StrContains(warnings[0], "all files may take at once; its symbol tables name its functions"))
      << warnings[0];

  // Still named, from the symbol tables: only source lines are lost.
  const uint64_t main_addr = SymbolAddress(b, "main");
  ASSERT_NE(main_addr, 0u);
  const std::vector<Symbolizer::SourceFrame> from_symbols = symbols.Frames(b, main_addr);
  ASSERT_FALSE(from_symbols.empty());
  EXPECT_EQ(from_symbols.back().function, "main");
  EXPECT_EQ(from_symbols.back().line, 0);
  const std::vector<Symbolizer::SourceFrame> from_dwarf = symbols.Frames(a, main_addr);
  ASSERT_FALSE(from_dwarf.empty());
  EXPECT_GT(from_dwarf.back().line, 0);

  // A closed session gives its share back to the next file.
  symbols.CloseSession(a);
  EXPECT_EQ(symbols.expanded_dwarf_open(), 0u);
  EXPECT_TRUE(symbols.HasDwarf(c));
  EXPECT_EQ(symbols.expanded_dwarf_open(), each);
  // And a's next lookup is refused in turn while c holds the room.
  EXPECT_FALSE(symbols.HasDwarf(a));
  symbols.Evict(c);
  EXPECT_EQ(symbols.expanded_dwarf_open(), 0u);
}

TEST_F(DwarfBudget, APerFileCapRefusesAFileThatAloneExceedsIt) {
  const std::string a = Compressed("a");
  const uint64_t each = ExpandedOf(a);
  Warnings sink;
  DwarfSymbolizer symbols(&sink);
  symbols.SetMaxExpandedDwarf(each - 1);
  EXPECT_FALSE(symbols.HasDwarf(a));
  const std::vector<std::string> warnings = sink.Take();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_TRUE(absl::StrContains(warnings[0], " MB a file may take; ")) << warnings[0];
  EXPECT_EQ(symbols.expanded_dwarf_open(), 0u);
}

TEST_F(DwarfBudget, WithoutCapsEveryFileKeepsItsDwarf) {
  const std::string a = Compressed("a"), b = Compressed("b");
  Warnings sink;
  DwarfSymbolizer symbols(&sink);
  EXPECT_TRUE(symbols.HasDwarf(a));
  EXPECT_TRUE(symbols.HasDwarf(b));
  EXPECT_EQ(symbols.expanded_dwarf_open(), 2 * ExpandedOf(a));
  EXPECT_TRUE(sink.Take().empty());
}

}  // namespace
}  // namespace ehprof
