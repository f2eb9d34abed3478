// FDE ranges as function identities: what names a stripped binary's
// unnamed functions ("plt_calls.stripped+0x1150") so that they stay
// distinct in profiles.
#include "unwind_tables/cfi_functions.h"

#include <cstdio>
#include <memory>
#include <regex>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "symbolizer/symbol_cache.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using ::ehprof::testing::FindSymbol;
using ::ehprof::testing::TestdataPath;

TEST(CfiFunctions, FindsTheRangeHoldingAnAddressAndNothingInGaps) {
  CfiFunctions f = CfiFunctions::FromRanges({{0x300, 0x380}, {0x100, 0x180}, {0x180, 0x200}});
  EXPECT_EQ(f.size(), 3u);
  EXPECT_FALSE(f.Find(0xff));
  EXPECT_EQ(f.Find(0x100)->begin, 0x100u);
  EXPECT_EQ(f.Find(0x17f)->begin, 0x100u);
  EXPECT_EQ(f.Find(0x180)->begin, 0x180u);
  EXPECT_FALSE(f.Find(0x200));
  EXPECT_FALSE(f.Find(0x2ff));
  EXPECT_EQ(f.Find(0x37f)->end, 0x380u);
  EXPECT_FALSE(f.Find(0x380));
  EXPECT_FALSE(f.Find(~uint64_t{0}));
}

TEST(CfiFunctions, AnOverlappingFdeNeverNamesTheEarlierFunctionsCode) {
  CfiFunctions f = CfiFunctions::FromRanges({{0x100, 0x200}, {0x150, 0x250}, {0x120, 0x130}});
  EXPECT_EQ(f.size(), 1u);
  EXPECT_EQ(f.Find(0x160)->begin, 0x100u);
  EXPECT_FALSE(f.Find(0x210));
}

// Every FDE start readelf lists is a range start here, and no other.
TEST(CfiFunctions, StartsAreTheFdeStartsReadelfLists) {
  std::string path = TestdataPath("plt_calls.stripped");
  auto elf = ElfFile::Open(path);
  ASSERT_TRUE(elf.ok()) << elf.status();
  auto f = CfiFunctions::FromElf(*elf);
  ASSERT_TRUE(f.ok()) << f.status();
  FILE* p = popen(("readelf --debug-dump=frames " + path).c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  pclose(p);
  std::set<uint64_t> starts;
  std::regex fde(R"(FDE cie=[0-9a-f]+ pc=([0-9a-f]+)\.\.([0-9a-f]+))");
  for (std::sregex_iterator it(out.begin(), out.end(), fde), end; it != end; ++it) {
    uint64_t b = std::stoull((*it)[1], nullptr, 16), e = std::stoull((*it)[2], nullptr, 16);
    if (e > b) starts.insert(b);
  }
  ASSERT_FALSE(starts.empty()) << out;
  EXPECT_EQ(f->size(), starts.size());
  for (uint64_t s : starts) {
    ASSERT_TRUE(f->Find(s)) << std::hex << s;
    EXPECT_EQ(f->Find(s)->begin, s);
  }
}

// A stripped binary's static function, which no symbol names, is named by
// its FDE: the same start the unstripped copy's symbol has, so two such
// functions never merge into one frame.
TEST(CfiFunctions, SymbolCacheNamesUnnamedFunctionsByFileAndFdeStart) {
  auto inner = FindSymbol(TestdataPath("plt_calls"), "plt_inner");
  auto main_sym = FindSymbol(TestdataPath("plt_calls"), "main");
  ASSERT_TRUE(inner && main_sym);
  Warnings warnings;
  SymbolCache cache(&warnings);
  std::string stripped = TestdataPath("plt_calls.stripped");
  auto a = cache.Lookup(stripped, inner->addr + 2);
  auto b = cache.Lookup(stripped, main_sym->addr + 1);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->name, absl::StrCat("plt_calls.stripped+0x", absl::Hex(inner->addr)));
  EXPECT_EQ(a->start, inner->addr);
  EXPECT_EQ(b->name, absl::StrCat("plt_calls.stripped+0x", absl::Hex(main_sym->addr)));
  EXPECT_NE(a->name, b->name);
  // The unstripped copy keeps its real names.
  EXPECT_EQ(cache.Symbolize(TestdataPath("plt_calls"), inner->addr + 2), "plt_inner");
}

}  // namespace
}  // namespace ehprof
