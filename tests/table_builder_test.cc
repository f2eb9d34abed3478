// The table builder on the testdata programs: each covers one CFI feature.
#include "unwind_tables/table_builder.h"

#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::FindSymbol;
using testing::TestdataPath;

UnwindTable Build(const std::string& path) {
  auto t = BuildUnwindTableFromPath(path);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(*t) : UnwindTable{};
}

// The rows starting inside [sym, sym+size) of `name` in the unstripped
// program, plus the one in force at its start.
std::vector<UnwindRow> RowsOf(const UnwindTable& t, const std::string& program,
                              const std::string& name) {
  auto sym = FindSymbol(TestdataPath(program), name);
  EXPECT_TRUE(sym.has_value()) << name;
  std::vector<UnwindRow> out;
  if (!sym) return out;
  out.push_back({sym->addr, LookupPlainRow(t.rows, sym->addr)});
  for (const UnwindRow& r : t.rows) {
    if (r.addr > sym->addr && r.addr < sym->addr + sym->size) out.push_back(r);
  }
  return out;
}

void ExpectWellFormed(const UnwindTable& t) {
  ASSERT_FALSE(t.rows.empty());
  EXPECT_TRUE(t.rows.back().rule.is_none());
  for (size_t i = 1; i < t.rows.size(); ++i) {
    EXPECT_LT(t.rows[i - 1].addr, t.rows[i].addr) << i;
    EXPECT_FALSE(t.rows[i - 1].rule == t.rows[i].rule) << "repeated rule at row " << i;
  }
}

class EveryProgram : public ::testing::TestWithParam<const char*> {};

TEST_P(EveryProgram, RowsAreSortedDistinctAndEndWithNone) {
  for (std::string suffix : {"", ".stripped"}) {
    UnwindTable t = Build(TestdataPath(std::string(GetParam()) + suffix));
    ExpectWellFormed(t);
    EXPECT_EQ(t.source(), "eh_frame");
  }
}

INSTANTIATE_TEST_SUITE_P(Testdata, EveryProgram,
                         ::testing::Values("plt_calls", "sig_handler", "asm_cfi", "realign",
                                           "deep_recursion", "threads", "libdlwork.so"));

TEST(TableBuilder, StrippedAndUnstrippedTablesAreIdentical) {
  EXPECT_EQ(Build(TestdataPath("plt_calls")).rows,
            Build(TestdataPath("plt_calls.stripped")).rows);
}

TEST(TableBuilder, HandWrittenAssemblyCfiIsFollowed) {
  UnwindTable t = Build(TestdataPath("asm_cfi"));
  std::vector<UnwindRow> rows = RowsOf(t, "asm_cfi", "asm_spin");
  // push rbx; push r12; sub $24, rsp: the CFA climbs 8 -> 16 -> 24 -> 48.
  std::vector<int64_t> offsets;
  for (const UnwindRow& r : rows) {
    ASSERT_EQ(r.rule.cfa_kind, EHP_CFA_REG);
    EXPECT_EQ(r.rule.cfa_reg, EHP_REG_RSP);
    offsets.push_back(r.rule.cfa_offset);
  }
  ASSERT_GE(offsets.size(), 4u);
  EXPECT_EQ(std::vector<int64_t>(offsets.begin(), offsets.begin() + 4),
            (std::vector<int64_t>{8, 16, 24, 48}));
  EXPECT_EQ(offsets.back(), 8);
}

TEST(TableBuilder, RealignedFunctionUsesRbpOrADereference) {
  UnwindTable t = Build(TestdataPath("realign"));
  bool via_frame = false;
  for (const UnwindRow& r : RowsOf(t, "realign", "realign_frame")) {
    if ((r.rule.cfa_kind == EHP_CFA_REG && r.rule.cfa_reg == EHP_REG_RBP) ||
        r.rule.cfa_kind == EHP_CFA_DEREF) {
      via_frame = true;
    }
  }
  EXPECT_TRUE(via_frame) << "after 'and $-64, %rsp' the CFA can only come from rbp";
}

TEST(TableBuilder, PltRowsUseThePltExpression) {
  UnwindTable t = Build(TestdataPath("plt_calls.stripped"));
  size_t plt = 0;
  for (const UnwindRow& r : t.rows) plt += r.rule.cfa_kind == EHP_CFA_PLT_LIT11;
  EXPECT_GE(plt, 1u);
}

TEST(TableBuilder, StartHasAnUndefinedReturnAddress) {
  UnwindTable t = Build(TestdataPath("plt_calls"));
  auto start = FindSymbol(TestdataPath("plt_calls"), "_start");
  ASSERT_TRUE(start);
  EXPECT_EQ(LookupPlainRow(t.rows, start->addr + 1).ra_kind, EHP_RULE_UNDEFINED);
}

TEST(TableBuilder, LibcSignalTrampolineIsMarked) {
  UnwindTable t = Build("/usr/lib/x86_64-linux-gnu/libc.so.6");
  size_t signal_rows = 0;
  for (const UnwindRow& r : t.rows) signal_rows += (r.rule.flags & EHP_RULE_FLAG_SIGNAL) != 0;
  EXPECT_GE(signal_rows, 1u);
}

TEST(TableBuilder, GapsBetweenFunctionsAreExplicit) {
  UnwindTable t = Build(TestdataPath("asm_cfi"));
  auto spin = FindSymbol(TestdataPath("asm_cfi"), "asm_spin");
  ASSERT_TRUE(spin);
  // asm_spin is followed by padding before _fini: no CFI there.
  EXPECT_TRUE(LookupPlainRow(t.rows, spin->addr + spin->size).is_none());
  EXPECT_TRUE(LookupPlainRow(t.rows, 0).is_none());
}

}  // namespace
}  // namespace ehprof
