// The one address cache record and agent name user addresses through: a
// function named once per (file, address), inline expansions innermost
// first, files evicted within their budget, and generations retired only
// between rounds. On the testdata binaries, no root.
#include "agent/resolve/address_symbolizer.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::FindSymbol;
using testing::SourceLineWith;
using testing::TestdataPath;

TEST(AddressSymbolizer, NamesAnAddressOnceAndCachesIt) {
  const std::string file = TestdataPath("inline_work");
  auto sym = FindSymbol(file, "work_outer");
  ASSERT_TRUE(sym);
  Warnings warnings;
  AddressSymbolizer symbols({}, &warnings);
  const AddressSymbolizer::Symbolized& s = symbols.Lookup(file, sym->addr);
  ASSERT_FALSE(s.frames.empty());
  EXPECT_EQ(s.frames.back().function, "work_outer");
  EXPECT_FALSE(s.frames.back().inlined);
  EXPECT_EQ(s.start, sym->addr);
  EXPECT_EQ(&symbols.Lookup(file, sym->addr), &s);  // the cached entry
  EXPECT_EQ(symbols.usage().addresses, 1u);
  EXPECT_EQ(symbols.usage().files, 1u);
}

TEST(AddressSymbolizer, AnInlinedCallIsTheInnermostFrame) {
  const std::string file = TestdataPath("inline_work");
  const int hot = SourceLineWith("testdata/inline_work.c", "/* HOT */");
  auto outer = FindSymbol(file, "work_outer");
  ASSERT_TRUE(outer);
  Warnings warnings;
  AddressSymbolizer symbols({}, &warnings);
  // Somewhere in work_outer is the inlined spin_inlined, at its HOT line.
  bool found = false;
  for (uint64_t a = outer->addr; a < outer->addr + outer->size && !found; ++a) {
    const auto& s = symbols.Lookup(file, a);
    found = s.frames.size() >= 2 && s.frames.front().inlined && s.frames.front().function == "spin_inlined" &&
            static_cast<int>(s.frames.front().line) == hot && s.frames.back().function == "work_outer";
  }
  EXPECT_TRUE(found);
}

TEST(AddressSymbolizer, KeepsItsFileBudgetAndRetiresBetweenRounds) {
  const std::string files[] = {TestdataPath("deep_recursion"), TestdataPath("churn_child"),
                               TestdataPath("exec_child")};
  AddressSymbolizer::Options o;
  o.max_files = 2;
  o.address_cache_bytes = 1;  // every round retires the one before
  Warnings warnings;
  AddressSymbolizer symbols(o, &warnings);
  for (const std::string& f : files) {
    auto main = FindSymbol(f, "main");
    ASSERT_TRUE(main) << f;
    EXPECT_EQ(symbols.Lookup(f, main->addr).frames.back().function, "main") << f;
  }
  EXPECT_EQ(symbols.usage().files, 2u);
  EXPECT_EQ(symbols.usage().files_evicted, 1u);
  // Within a round nothing is retired; the next round moves the three
  // addresses to the previous generation, where a lookup finds them.
  EXPECT_EQ(symbols.usage().addresses, 3u);
  symbols.NextRound();
  EXPECT_EQ(symbols.usage().addresses, 3u);
  auto main = FindSymbol(files[2], "main");
  EXPECT_EQ(symbols.Lookup(files[2], main->addr).frames.back().function, "main");
  EXPECT_EQ(symbols.usage().addresses, 4u);  // moved to the current one, counted in both
  // Files the current round used are never evicted for a budget.
  EXPECT_EQ(symbols.EvictFor(UINT64_MAX).first, 1u);
  EXPECT_EQ(symbols.usage().files, 1u);
}

TEST(AddressSymbolizer, NoFileNoFrames) {
  Warnings warnings;
  AddressSymbolizer symbols({}, &warnings);
  EXPECT_TRUE(symbols.Lookup("/nonexistent/ehprof-test", 0x1000).frames.empty());
}

}  // namespace
}  // namespace ehprof
