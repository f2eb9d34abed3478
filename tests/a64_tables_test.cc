// AArch64 unwind rows on any host: testdata/a64_cfi.S covers PAC signing
// (DW_CFA_AARCH64_negate_ra_state, also across remember/restore_state), a
// frame bigger than s16 with its frame record at sp (the compact table's
// second rule form), a CFA from x29, _start's undefined x30, a leaf whose
// return address stays in x30, and .plt, which has no CFI.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "unwind_tables/compact_table.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {
namespace {

using testing::FindSymbol;
using testing::TestdataPath;

std::string Fixture() { return TestdataPath("a64_cfi.so"); }

UnwindTable Build() {
  TableBuildOptions o;
  o.any_arch = true;
  auto t = BuildUnwindTableFromPath(Fixture(), o);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? std::move(*t) : UnwindTable{};
}

// "+OFFSET rule" for each row inside the function, offsets from its start.
std::vector<std::string> RowsOf(const UnwindTable& t, const std::string& name) {
  auto sym = FindSymbol(Fixture(), name);
  EXPECT_TRUE(sym.has_value()) << name;
  std::vector<std::string> out;
  if (!sym) return out;
  out.push_back("+0 " + FormatRule(LookupPlainRow(t.rows, sym->addr), Arch::kAarch64));
  for (const UnwindRow& r : t.rows) {
    if (r.addr > sym->addr && r.addr < sym->addr + sym->size) {
      out.push_back("+" + std::to_string(r.addr - sym->addr) + " " +
                    FormatRule(r.rule, Arch::kAarch64));
    }
  }
  return out;
}

TEST(A64Tables, TheAgentRefusesAnotherArchitecture) {
  if (NativeArch() == Arch::kAarch64) GTEST_SKIP() << "needs a non-aarch64 host";
  auto t = BuildUnwindTableFromPath(Fixture());
  ASSERT_FALSE(t.ok());
  EXPECT_NE(t.status().message().find("an aarch64 ELF file"), std::string::npos) << t.status();
  EXPECT_NE(t.status().message().find("a64_cfi.so"), std::string::npos) << t.status();
}

TEST(A64Tables, LeafReturnAddressStaysInX30) {
  UnwindTable t = Build();
  EXPECT_EQ(t.arch, Arch::kAarch64);
  EXPECT_EQ(RowsOf(t, "a64_leaf"), std::vector<std::string>({"+0 cfa=sp+0 x29=same ra=x30"}));
}

TEST(A64Tables, PacStateTogglesAndFollowsRememberRestore) {
  EXPECT_EQ(RowsOf(Build(), "a64_pac"), std::vector<std::string>({
      "+0 cfa=sp+0 x29=same ra=x30",
      "+4 cfa=sp+0 x29=same ra=x30 pac",           // after paciasp
      "+8 cfa=sp+32 x29=cfa-32 ra=cfa-24 pac",     // after stp x29, x30
      "+20 cfa=sp+0 x29=same ra=x30 pac",          // after the first ldp
      "+24 cfa=sp+0 x29=same ra=x30",              // after autiasp
      "+28 cfa=sp+32 x29=cfa-32 ra=cfa-24 pac",    // restore_state: signed again
      "+36 cfa=sp+0 x29=same ra=x30 pac",
      "+40 cfa=sp+0 x29=same ra=x30"}));
}

TEST(A64Tables, CfaFromX29) {
  EXPECT_EQ(RowsOf(Build(), "a64_fp_cfa"), std::vector<std::string>({
      "+0 cfa=sp+0 x29=same ra=x30",
      "+4 cfa=sp+16 x29=cfa-16 ra=cfa-8",
      "+8 cfa=x29+16 x29=cfa-16 ra=cfa-8",
      "+20 cfa=sp+16 x29=cfa-16 ra=cfa-8",
      "+24 cfa=sp+0 x29=same ra=x30"}));
}

TEST(A64Tables, StartHasNoReturnAddress) {
  EXPECT_EQ(RowsOf(Build(), "_start"), std::vector<std::string>({
      "+0 cfa=sp+0 x29=same ra=undef"}));
}

TEST(A64Tables, PltStubsKeepTheReturnAddressInX30) {
  UnwindTable t = Build();
  EXPECT_EQ(t.source(), "eh_frame+plt");
  auto elf = ElfFile::Open(Fixture());
  ASSERT_TRUE(elf.ok()) << elf.status();
  auto plt = elf->Section(".plt");
  ASSERT_TRUE(plt.ok() && plt->has_value());
  const uint64_t begin = (*plt)->addr, end = begin + (*plt)->size;
  // PLT0 starts with stp x16, x30, [sp, #-16]! (no `bti c` here).
  EXPECT_EQ(FormatRule(LookupPlainRow(t.rows, begin), Arch::kAarch64),
            "cfa=sp+0 x29=same ra=x30");
  EXPECT_EQ(FormatRule(LookupPlainRow(t.rows, begin + 4), Arch::kAarch64),
            "cfa=sp+16 x29=same ra=x30");
  for (uint64_t pc = begin + 32; pc < end; pc += 4) {
    EXPECT_EQ(FormatRule(LookupPlainRow(t.rows, pc), Arch::kAarch64), "cfa=sp+0 x29=same ra=x30")
        << std::hex << pc;
  }
}

TEST(A64Tables, BigFrameUsesTheSecondRuleForm) {
  UnwindTable t = Build();
  auto sym = FindSymbol(Fixture(), "a64_big_frame");
  ASSERT_TRUE(sym.has_value());
  const uint64_t after_stp = sym->addr + 12;
  EXPECT_EQ(FormatRule(LookupPlainRow(t.rows, after_stp), Arch::kAarch64),
            "cfa=sp+786448 x29=cfa-786448 ra=cfa-786440");
  auto compact = EncodeCompactTable(t.rows, Fixture());
  ASSERT_TRUE(compact.ok()) << compact.status();
  EXPECT_EQ(compact->unencodable_rows, 0u);
  const ehp_rule r = CompactLookup(*compact, after_stp);
  EXPECT_TRUE(r.flags & EHP_RULE_FLAG_SAVED_FROM_REG);
  EXPECT_EQ(r.cfa_reg, EHP_A64_REG_SP);
  EXPECT_EQ(r.cfa_offset, 786448);
  EXPECT_EQ(r.rbp_offset, 0);  // x29 = *(sp + 0)
  EXPECT_EQ(r.ra_offset, 8);   // x30 = *(sp + 8)
  // Every row reads back as the plain rule it came from.
  for (size_t i = 0; i + 1 < t.rows.size(); ++i) {
    EXPECT_EQ(FromCompactRule(CompactLookup(*compact, t.rows[i].addr)), t.rows[i].rule)
        << FormatRow(t.rows[i], Arch::kAarch64);
  }
}

TEST(A64Tables, SecondFormOnlyWhereThePlainOneDoesNotFit) {
  UnwindRule u;
  u.cfa_kind = EHP_CFA_REG;
  u.cfa_reg = EHP_A64_REG_SP;
  u.cfa_offset = 40000;
  u.rbp_kind = EHP_RULE_CFA_OFFSET;
  u.rbp_offset = -16;
  u.ra_kind = EHP_RULE_CFA_OFFSET;
  u.ra_offset = -8;
  ehp_rule r;
  ASSERT_TRUE(ToCompactRule(u, &r));
  EXPECT_FALSE(r.flags & EHP_RULE_FLAG_SAVED_FROM_REG);  // near the CFA: plain
  u.rbp_offset = -40000;
  u.ra_offset = -8;  // x29 at sp, x30 next to the CFA: neither form fits both
  EXPECT_FALSE(ToCompactRule(u, &r));
  u.ra_offset = -39992;
  ASSERT_TRUE(ToCompactRule(u, &r));
  EXPECT_TRUE(r.flags & EHP_RULE_FLAG_SAVED_FROM_REG);
  EXPECT_EQ(FromCompactRule(r), u);
}

}  // namespace
}  // namespace ehprof
