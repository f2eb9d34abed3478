// The table builder on the testdata programs: each covers one CFI feature.
#include "unwind_tables/table_builder.h"

#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <ios>
#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "unwind_tables/entry_point_rows.h"

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
    // "+init": rows of the program's .init/.fini code (glibc's crti
    // has no CFI for it) over its .eh_frame's; "+crt", of crtbegin's
    // functions (crt_rows_test).
    EXPECT_TRUE(t.source() == "eh_frame" || t.source() == "eh_frame+init" || t.source() == "eh_frame+init+crt")
        << t.source();
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
  // crti/crtn's .init and .fini have no CFI: rows from their code.
  EXPECT_EQ(full.source(), "eh_frame+debug_frame+init+crt");
  EXPECT_EQ(split.source(), "eh_frame+debug_frame+init+crt");
  EXPECT_EQ(split.debug_file, TestdataPath("debugframe_only.debug"));
  EXPECT_EQ(full.rows, split.rows);
  auto inner = FindSymbol(TestdataPath("debugframe_only"), "plt_inner");
  ASSERT_TRUE(inner);
  EXPECT_FALSE(LookupPlainRow(split.rows, inner->addr).is_none());

  TableBuildOptions no_debug;
  no_debug.find_debug_file = false;
  auto alone = BuildUnwindTableFromPath(TestdataPath("debugframe_only.stripped"), no_debug);
  ASSERT_TRUE(alone.ok());
  EXPECT_EQ(alone->source(), "eh_frame+init");
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

// glibc's ld.so has no FDE for _start (its e_entry), where every program
// begins: the return address of `call _dl_start` (and _dl_start_user's of
// `call _dl_init`) is the bottom of the stack, not a stop.
TEST(TableBuilder, LdSoEntryPointIsTheBottom) {
  const std::string ld = "/lib64/ld-linux-x86-64.so.2";
  auto elf = ElfFile::Open(ld);
  ASSERT_TRUE(elf.ok()) << elf.status();
  const uint64_t entry = elf->entry();
  TableBuildOptions cfi_only;
  cfi_only.entry_point_rows = false;
  auto bare = BuildUnwindTableFromPath(ld, cfi_only);
  ASSERT_TRUE(bare.ok()) << bare.status();
  // The premise, as readelf --debug-dump=frames shows: no FDE there.
  ASSERT_TRUE(LookupPlainRow(bare->rows, entry).is_none());
  UnwindTable t = Build(ld);
  EXPECT_TRUE(t.entry_point_rows);
  // After `mov %rsp,%rdi` (3 bytes) and `call _dl_start` (5): entry + 8.
  const UnwindRule at_call = LookupPlainRow(t.rows, entry + 8);
  EXPECT_EQ(at_call.ra_kind, EHP_RULE_UNDEFINED);
  EXPECT_EQ(at_call.cfa_kind, EHP_CFA_REG);
  EXPECT_TRUE(LookupPlainRow(t.rows, entry + kEntryPointBytes).is_none() ||
              !LookupPlainRow(bare->rows, entry + kEntryPointBytes).is_none());
  // The byte before (padding, no CFI): where a sample taken as execve
  // returns looks the entry up (pc - 1, as after a `syscall`).
  ASSERT_TRUE(LookupPlainRow(bare->rows, entry - 1).is_none());
  EXPECT_EQ(LookupPlainRow(t.rows, entry - 1).ra_kind, EHP_RULE_UNDEFINED);
  // Everywhere else the table is the CFI's.
  for (const UnwindRow& r : bare->rows) {
    if (r.addr >= entry - 1 && r.addr < entry + kEntryPointBytes) continue;
    EXPECT_EQ(LookupPlainRow(t.rows, r.addr), r.rule) << std::hex << r.addr;
  }
}

// crt1's _start has CFI (an undefined return address): left as it is.
TEST(TableBuilder, EntryPointWithCfiKeepsIt) {
  TableBuildOptions cfi_only;
  cfi_only.entry_point_rows = false;
  auto bare = BuildUnwindTableFromPath(TestdataPath("plt_calls"), cfi_only);
  ASSERT_TRUE(bare.ok()) << bare.status();
  UnwindTable t = Build(TestdataPath("plt_calls"));
  EXPECT_FALSE(t.entry_point_rows);
  EXPECT_EQ(t.rows, bare->rows);
}

// A hostile e_entry (the file is the user's): anywhere, wrapping past the
// top, in a segment that ends there. The table stays sorted with a none
// row last, and rows are added only inside executable code the file loads.
TEST(TableBuilder, HostileEntryPointsLeaveAWellFormedTable) {
  const std::string src = TestdataPath("asm_cfi");
  std::string bytes = testing::ReadFile(src);
  ASSERT_GT(bytes.size(), 64u);
  auto elf = ElfFile::Open(src);
  ASSERT_TRUE(elf.ok()) << elf.status();
  std::vector<uint64_t> entries = {1, UINT64_MAX, UINT64_MAX - 63, UINT64_MAX - 64, uint64_t{1} << 63};
  for (const ElfSegment& s : elf->segments()) {
    entries.push_back(s.vaddr + s.memsz - 1);  // 64 bytes would pass the segment's end
    entries.push_back(s.vaddr + s.memsz);
  }
  const std::string path = ::testing::TempDir() + "/hostile_entry." + std::to_string(::getpid());
  for (uint64_t entry : entries) {
    std::memcpy(bytes.data() + 24, &entry, sizeof(entry));  // e_entry
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    auto t = BuildUnwindTableFromPath(path);
    ASSERT_TRUE(t.ok()) << t.status();
    ExpectWellFormed(*t);
    if (t->entry_point_rows) {
      EXPECT_EQ(LookupPlainRow(t->rows, entry).ra_kind, EHP_RULE_UNDEFINED) << std::hex << entry;
    }
  }
  std::remove(path.c_str());
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
