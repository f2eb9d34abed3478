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

TEST(TableBuilder, RealignedStackUsesTheDereferenceRule) {
  // GCC realigns through r10: DW_CFA_def_cfa_expression(breg6 -8; deref)
  // and rbp saved at DW_CFA_expression(breg6 0).
  UnwindTable t = Build(TestdataPath("realign.stripped"));
  auto sym = FindSymbol(TestdataPath("realign"), "realign_frame");
  ASSERT_TRUE(sym);
  bool deref = false;
  for (const UnwindRow& r : RowsOf(t, "realign", "realign_frame")) {
    if (r.rule.cfa_kind != EHP_CFA_DEREF) continue;
    deref = true;
    EXPECT_EQ(FormatRule(r.rule), "cfa=*(rbp-8) rbp=*(rbp+0) ra=cfa-8");
  }
  EXPECT_TRUE(deref);
}

TEST(TableBuilder, SeparateDebugFileFillsWhatEhFrameLacks) {
  // Built -fno-asynchronous-unwind-tables: only crt code has .eh_frame; the
  // program's own CFI is in .debug_frame, which the stripped copy keeps in
  // debugframe_only.debug (found through .gnu_debuglink).
  UnwindTable full = Build(TestdataPath("debugframe_only"));
  UnwindTable split = Build(TestdataPath("debugframe_only.stripped"));
  EXPECT_EQ(full.source(), "eh_frame+debug_frame");
  EXPECT_EQ(split.source(), "eh_frame+debug_frame");
  EXPECT_EQ(split.debug_file, TestdataPath("debugframe_only.debug"));
  EXPECT_EQ(full.rows, split.rows);
  auto inner = FindSymbol(TestdataPath("debugframe_only"), "plt_inner");
  ASSERT_TRUE(inner);
  EXPECT_FALSE(LookupPlainRow(split.rows, inner->addr).is_none());

  TableBuildOptions no_debug;
  no_debug.find_debug_file = false;
  auto alone = BuildUnwindTableFromPath(TestdataPath("debugframe_only.stripped"), no_debug);
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(alone->source(), "eh_frame");
  EXPECT_TRUE(LookupPlainRow(alone->rows, inner->addr).is_none());
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
