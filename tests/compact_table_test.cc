// The compact encoding must answer every lookup exactly as the plain rows do.
#include "unwind_tables/compact_table.h"

#include <random>
#include <string>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {
namespace {

UnwindRule Expected(const std::vector<UnwindRow>& rows, uint64_t addr) {
  ehp_rule r;
  ToCompactRule(LookupPlainRow(rows, addr), &r);
  return FromCompactRule(r);
}

// Checks every row start, the byte before it, and random addresses; returns
// the number of mismatches (reporting the first few).
size_t RoundTrip(const std::vector<UnwindRow>& rows, const CompactTable& t) {
  size_t bad = 0;
  auto check = [&](uint64_t addr) {
    UnwindRule want = Expected(rows, addr);
    UnwindRule got = FromCompactRule(CompactLookup(t, addr));
    if (!(want == got) && ++bad <= 5) {
      ADD_FAILURE() << absl::StrFormat("at 0x%x: plain %s, compact %s", addr,
                                       FormatRule(want), FormatRule(got));
    }
  };
  for (const UnwindRow& row : rows) {
    check(row.addr);
    check(row.addr - 1);
    check(row.addr + 1);
  }
  std::mt19937_64 rng(42);
  if (!rows.empty()) {
    std::uniform_int_distribution<uint64_t> dist(rows.front().addr - 100, rows.back().addr + 100);
    for (int i = 0; i < 100000; ++i) check(dist(rng));
  }
  check(0);
  check(~uint64_t{0});
  return bad;
}

UnwindRule RspRule(int32_t off) { return RegisterCfaRule(EHP_REG_RSP, off, EHP_RULE_CFA_OFFSET, -8); }

class CompactRealBinary : public ::testing::TestWithParam<const char*> {};

TEST_P(CompactRealBinary, LookupsEqualPlainRowsAndFitFourBytesARow) {
  auto table = BuildUnwindTableFromPath(GetParam());
  ASSERT_TRUE(table.ok()) << table.status();
  auto compact = EncodeCompactTable(table->rows, GetParam());
  ASSERT_TRUE(compact.ok()) << compact.status();
  EXPECT_EQ(compact->unencodable_rows, 0u);
  EXPECT_EQ(RoundTrip(table->rows, *compact), 0u);
  EXPECT_LE(static_cast<double>(compact->bytes()) / table->rows.size(), 4.0);
}

INSTANTIATE_TEST_SUITE_P(Debian, CompactRealBinary,
                         ::testing::Values("/usr/bin/fio",
                                           "/usr/lib/x86_64-linux-gnu/libc.so.6",
                                           testing::DebianPython(), testing::DebianLibLlvm()));

TEST(CompactTable, PageWithManyDistinctRulesShrinksThePageSize) {
  std::vector<UnwindRow> rows;
  for (int i = 0; i < 600; ++i) rows.push_back({0x10000 + uint64_t(i) * 4, RspRule(8 + 8 * i)});
  rows.push_back({0x10000 + 600 * 4, UnwindRule::None()});
  auto t = EncodeCompactTable(rows, "synthetic");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_LT(t->page_shift, 16u);
  EXPECT_EQ(t->rules.size(), 601u);
  EXPECT_EQ(RoundTrip(rows, *t), 0u);
}

TEST(CompactTable, DensePagesShrinkUntilEveryPageFitsAChunk) {
  // 10,000 rows in 40 KB: more than EHP_MAX_PAGE_ROWS in a 64 KiB page.
  std::vector<UnwindRow> rows;
  for (int i = 0; i < 10000; ++i) rows.push_back({0x20000 + uint64_t(i) * 4, RspRule(8 + 8 * (i % 2))});
  rows.push_back({0x20000 + 10000 * 4, UnwindRule::None()});
  auto t = EncodeCompactTable(rows, "dense");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_LT(t->page_shift, 16u);
  for (const ehp_page& p : t->pages) {
    EXPECT_GE(p.num_rows, 1u);
    EXPECT_LE(p.num_rows, uint32_t{EHP_MAX_PAGE_ROWS});
  }
  EXPECT_EQ(RoundTrip(rows, *t), 0u);
}

TEST(CompactTable, EveryPageStartsWithTheRuleInForce) {
  // One rule spanning several 64 KiB pages with no row inside them.
  std::vector<UnwindRow> rows = {{0x1000, RspRule(16)},
                                 {0x50000, RspRule(24)},
                                 {0x50010, UnwindRule::None()}};
  auto t = EncodeCompactTable(rows, "sparse");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(FromCompactRule(CompactLookup(*t, 0x3ffff)), RspRule(16));
  EXPECT_EQ(FromCompactRule(CompactLookup(*t, 0x40000)), RspRule(16));
  EXPECT_EQ(FromCompactRule(CompactLookup(*t, 0x50008)), RspRule(24));
  EXPECT_TRUE(FromCompactRule(CompactLookup(*t, 0x50010)).is_none());
  EXPECT_TRUE(FromCompactRule(CompactLookup(*t, 0xfff)).is_none());
  EXPECT_EQ(RoundTrip(rows, *t), 0u);
}

TEST(CompactTable, OversizedOffsetsAreCountedNotTruncated) {
  // Past 32 bits the row itself says unsupported (NarrowRule); past the
  // compact form's 16-bit rbp offset the encoder does, and counts it.
  WideRule wide{.cfa_offset = int64_t{1} << 40, .cfa_kind = EHP_CFA_REG, .cfa_reg = EHP_REG_RSP};
  const UnwindRule big = NarrowRule(wide);
  EXPECT_EQ(big.cfa_kind, EHP_CFA_EXPR);
  UnwindRule big_rbp = RspRule(16);
  big_rbp.rbp_kind = EHP_RULE_CFA_OFFSET;
  big_rbp.rbp_offset = -70000;
  std::vector<UnwindRow> rows = {{0x1000, big}, {0x1010, big_rbp}, {0x1020, UnwindRule::None()}};
  auto t = EncodeCompactTable(rows, "big");
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->unencodable_rows, 1u);
  EXPECT_EQ(CompactLookup(*t, 0x1000).cfa_kind, EHP_CFA_EXPR);
  ehp_rule r = CompactLookup(*t, 0x1010);
  EXPECT_EQ(r.cfa_kind, EHP_CFA_REG);
  EXPECT_EQ(r.rbp_kind, EHP_RULE_OTHER);
}

// rbx's save slot rides in cfa_deref_add (a register-based CFA's spare
// field): kept in both forms of a rule, plain and counted from the CFA
// rule's register (a frame whose save slots sit far below its CFA).
TEST(CompactTable, RbxSaveSlotsSurviveEitherForm) {
  UnwindRule near = RspRule(32);
  near.cfa_reg = EHP_REG_RBX;
  near.flags = EHP_RULE_FLAG_RBX_SAVED;
  near.cfa_deref_add = -32;
  UnwindRule far = RspRule(40000);
  far.ra_offset = -40000;  // the return address at the frame's bottom
  far.flags = EHP_RULE_FLAG_RBX_SAVED;
  far.cfa_deref_add = -39992;
  UnwindRule same = RspRule(8);
  same.flags = EHP_RULE_FLAG_RBX_SAME;
  std::vector<UnwindRow> rows = {{0x1000, near}, {0x1010, far}, {0x1020, same}, {0x1030, UnwindRule::None()}};
  auto t = EncodeCompactTable(rows, "rbx");
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->unencodable_rows, 0u);
  EXPECT_EQ(RoundTrip(rows, *t), 0u);
  const ehp_rule r = CompactLookup(*t, 0x1010);
  EXPECT_TRUE(r.flags & EHP_RULE_FLAG_SAVED_FROM_REG);
  EXPECT_EQ(r.cfa_deref_add, 8);  // rsp+8: 40000 - 39992
  EXPECT_EQ(FromCompactRule(r), far);
  EXPECT_EQ(FromCompactRule(CompactLookup(*t, 0x1000)), near);
  EXPECT_EQ(FromCompactRule(CompactLookup(*t, 0x1020)), same);
}

TEST(NarrowRule, EachPartPast32BitsIsUnsupportedAndTheRestKept) {
  const int64_t huge = int64_t{1} << 33;
  WideRule w{.cfa_offset = 16, .rbp_offset = -huge, .ra_offset = -8, .cfa_kind = EHP_CFA_REG,
             .cfa_reg = EHP_REG_RSP, .rbp_kind = EHP_RULE_CFA_OFFSET, .ra_kind = EHP_RULE_CFA_OFFSET};
  UnwindRule r = NarrowRule(w);
  EXPECT_EQ(r.cfa_kind, EHP_CFA_REG);
  EXPECT_EQ(r.cfa_offset, 16);
  EXPECT_EQ(r.rbp_kind, EHP_RULE_OTHER);
  EXPECT_EQ(r.ra_kind, EHP_RULE_CFA_OFFSET);
  EXPECT_EQ(r.ra_offset, -8);
  w.rbp_offset = INT32_MIN;
  w.ra_offset = huge;
  r = NarrowRule(w);
  EXPECT_EQ(r.rbp_kind, EHP_RULE_CFA_OFFSET);
  EXPECT_EQ(r.rbp_offset, INT32_MIN);
  EXPECT_EQ(r.ra_kind, EHP_RULE_OTHER);
  w.cfa_kind = EHP_CFA_DEREF;
  w.cfa_deref_add = -huge;
  EXPECT_EQ(NarrowRule(w).cfa_kind, EHP_CFA_EXPR);
}

TEST(CompactTable, RejectsUnsortedRowsAndMissingEnd) {
  std::vector<UnwindRow> unsorted = {{0x2000, RspRule(8)}, {0x1000, UnwindRule::None()}};
  EXPECT_FALSE(EncodeCompactTable(unsorted, "x").ok());
  std::vector<UnwindRow> open = {{0x1000, RspRule(8)}};
  auto st = EncodeCompactTable(open, "x");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.status().message().find("none row"), std::string::npos);
}

TEST(CompactTable, RowsSpreadOverAHugeRangeAreRefusedNotAllocated) {
  // Two rows 1 TiB apart would need 16M pages (and 512 bytes of bucket
  // starts each): refused with a clear error instead.
  std::vector<UnwindRow> rows = {{0x1000, RspRule(8)}, {0x1000 + (uint64_t{1} << 40), UnwindRule::None()}};
  auto t = EncodeCompactTable(rows, "sparse.so");
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("sparse.so"), std::string::npos);
  EXPECT_NE(t.status().message().find("too sparse"), std::string::npos);
}

TEST(CompactTable, EmptyTableMissesEverything) {
  auto t = EncodeCompactTable({}, "empty");
  ASSERT_TRUE(t.ok());
  EXPECT_TRUE(FromCompactRule(CompactLookup(*t, 0x1234)).is_none());
}

}  // namespace
}  // namespace ehprof
