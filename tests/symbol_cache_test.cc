// SymbolCache keeps only the FDE ranges a lookup can reach: those no single
// symbol holds whole (UncoveredRanges), and names every address as the
// whole FDE set did.
#include "symbolizer/symbol_cache.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "elf/elf_file.h"

namespace ehprof {
namespace {

using ::ehprof::testing::TestdataPath;

std::shared_ptr<const ElfSymbols> MustLoad(const std::string& path) {
  auto t = ElfSymbols::Load(path);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : nullptr;
}

CfiFunctions MustCfi(const std::string& path) {
  auto elf = ElfFile::Open(path);
  EXPECT_TRUE(elf.ok()) << elf.status();
  auto cfi = CfiFunctions::FromElf(*elf);
  EXPECT_TRUE(cfi.ok()) << cfi.status();
  return *std::move(cfi);
}

// A lookup as SymbolCache does it: the symbols first, then the FDE.
std::optional<uint64_t> StartOf(const ElfSymbols& symbols, const CfiFunctions& cfi, uint64_t vaddr) {
  if (auto s = symbols.Find(vaddr)) return s->start;
  if (auto r = cfi.Find(vaddr)) return r->begin;
  return std::nullopt;
}

TEST(SymbolCacheTest, KeepsOnlyFdesNoSymbolHoldsAndNamesEveryAddressAsBefore) {
  for (const char* name : {"plt_calls", "libdlwork.so", "deep_recursion"}) {
    SCOPED_TRACE(name);
    const CfiFunctions all = MustCfi(TestdataPath(name));
    ASSERT_GT(all.size(), 0u);
    for (const std::string& file : {TestdataPath(name), TestdataPath(std::string(name) + ".stripped")}) {
      SCOPED_TRACE(file);
      auto symbols = MustLoad(file);
      ASSERT_NE(symbols, nullptr);
      const CfiFunctions kept = UncoveredRanges(all, {nullptr, symbols});
      EXPECT_LT(kept.size(), all.size());
      for (const FunctionRange& r : all.ranges()) {
        for (uint64_t a : {r.begin, r.begin + (r.end - r.begin) / 2, r.end - 1}) {
          EXPECT_EQ(StartOf(*symbols, kept, a), StartOf(*symbols, all, a)) << std::hex << a;
        }
      }
    }
  }
}

TEST(SymbolCacheTest, UnstrippedCodeNeedsNoFdeRanges) {
  // Every function of an unstripped -O2 build has its symbol and size.
  auto symbols = MustLoad(TestdataPath("plt_calls"));
  const CfiFunctions all = MustCfi(TestdataPath("plt_calls"));
  const CfiFunctions kept = UncoveredRanges(all, {symbols});
  for (const FunctionRange& r : kept.ranges()) {
    EXPECT_FALSE(symbols->Covers(r.begin, r.end)) << std::hex << r.begin;
  }
  EXPECT_LE(kept.size(), all.size() / 4) << kept.size() << " of " << all.size();
}

}  // namespace
}  // namespace ehprof
