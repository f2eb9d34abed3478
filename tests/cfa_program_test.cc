// Our CFA interpreter against libdw's dwarf_cfi_addrframe, an independent
// implementation, at every row boundary of real binaries.
#include "unwind_tables/cfa_program.h"

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <unistd.h>

#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {
namespace {

struct CfiDeleter {
  void operator()(Dwarf_CFI* c) const { dwarf_cfi_end(c); }
};
struct ElfDeleter {
  void operator()(Elf* e) const { elf_end(e); }
};

// libdw's answer for one address, in our rule's terms.
struct LibdwRule {
  bool covered = false;
  bool signal = false;
  bool cfa_is_reg = false;
  unsigned cfa_reg = 0;
  int64_t cfa_offset = 0;
  int rbp_kind = -1;  // EHP_RULE_* or -1 for "some expression"
  int64_t rbp_offset = 0;
  int ra_kind = -1;
  int64_t ra_offset = 0;
  int rbx_kind = -1;
  int64_t rbx_offset = 0;
};

// libdw's conventions (REFERENCE.md): undefined = nops 0 with ops pointing
// at ops_mem; same value = nops 0 with ops NULL; offset(N) = call_frame_cfa,
// plus_uconst N (offset(0): call_frame_cfa alone).
void DecodeRegister(Dwarf_Frame* frame, int reg, int* kind, int64_t* off) {
  Dwarf_Op ops_mem[3];
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  if (dwarf_frame_register(frame, reg, ops_mem, &ops, &nops) != 0) {
    *kind = -2;
    return;
  }
  if (nops == 0) {
    *kind = ops == nullptr ? EHP_RULE_SAME : EHP_RULE_UNDEFINED;
  } else if (nops == 1 && ops[0].atom == DW_OP_call_frame_cfa) {
    *kind = EHP_RULE_CFA_OFFSET;  // offset(0): at the CFA itself (__longjmp's rbx)
    *off = 0;
  } else if (nops == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
             ops[1].atom == DW_OP_plus_uconst) {
    *kind = EHP_RULE_CFA_OFFSET;
    *off = static_cast<int64_t>(ops[1].number);
  } else if (nops == 1 && ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31) {
    *kind = EHP_RULE_REGISTER;  // DW_CFA_register: in another register
    *off = ops[0].atom - DW_OP_reg0;
  } else if (nops == 1 && ops[0].atom == DW_OP_regx) {
    *kind = EHP_RULE_REGISTER;
    *off = static_cast<int64_t>(ops[0].number);
  } else {
    *kind = -1;
  }
}

LibdwRule AskLibdw(Dwarf_CFI* cfi, uint64_t addr) {
  LibdwRule r;
  Dwarf_Frame* frame = nullptr;
  if (dwarf_cfi_addrframe(cfi, addr, &frame) != 0) return r;
  std::unique_ptr<Dwarf_Frame, decltype(&free)> owned(frame, &free);
  r.covered = true;
  Dwarf_Addr start, end;
  bool signalp = false;
  dwarf_frame_info(frame, &start, &end, &signalp);
  r.signal = signalp;
  Dwarf_Op* ops = nullptr;
  size_t nops = 0;
  if (dwarf_frame_cfa(frame, &ops, &nops) == 0 && nops == 1 && ops[0].atom == DW_OP_bregx) {
    r.cfa_is_reg = true;
    r.cfa_reg = static_cast<unsigned>(ops[0].number);
    r.cfa_offset = static_cast<int64_t>(ops[0].number2);
  }
  DecodeRegister(frame, EHP_REG_RBP, &r.rbp_kind, &r.rbp_offset);
  DecodeRegister(frame, EHP_REG_RIP, &r.ra_kind, &r.ra_offset);
  DecodeRegister(frame, EHP_REG_RBX, &r.rbx_kind, &r.rbx_offset);
  return r;
}

std::string Describe(const LibdwRule& r) {
  return absl::StrFormat("libdw: covered=%d cfa_is_reg=%d reg=%u off=%d rbp=%d/%d ra=%d/%d rbx=%d/%d sig=%d",
                         r.covered, r.cfa_is_reg, r.cfa_reg, r.cfa_offset, r.rbp_kind,
                         r.rbp_offset, r.ra_kind, r.ra_offset, r.rbx_kind, r.rbx_offset, r.signal);
}

// rbx where our rows say (files with a CFA based on rbx): unchanged where
// libdw has it the same or never mentioned, else the same save slot.
bool RbxAgrees(const LibdwRule& theirs, const UnwindRule& ours) {
  if (ours.flags & EHP_RULE_FLAG_RBX_SAME) {
    return theirs.rbx_kind == EHP_RULE_SAME || theirs.rbx_kind == EHP_RULE_UNDEFINED;
  }
  if (ours.flags & EHP_RULE_FLAG_RBX_SAVED) {
    return theirs.rbx_kind == EHP_RULE_CFA_OFFSET && theirs.rbx_offset == ours.cfa_deref_add;
  }
  return true;
}

// Compares at every row start (and the byte before the next row), returns
// the number of addresses checked; rbx_saved (if given): how many of ours
// say rbx is in a save slot.
size_t CompareWithLibdw(const std::string& path, size_t* rbx_saved = nullptr) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  EXPECT_GE(fd, 0) << path;
  elf_version(EV_CURRENT);
  std::unique_ptr<Elf, ElfDeleter> elf(elf_begin(fd, ELF_C_READ_MMAP, nullptr));
  // The CFI must end before its Elf.
  std::unique_ptr<Dwarf_CFI, CfiDeleter> cfi(dwarf_getcfi_elf(elf.get()));
  EXPECT_NE(cfi, nullptr) << path;
  TableBuildOptions opts;
  opts.find_debug_file = false;
  opts.entry_point_rows = false;  // rows of ours where the file has no CFI
  opts.init_fini_rows = false;
  opts.crt_rows = false;
  auto table = BuildUnwindTableFromPath(path, opts);
  EXPECT_TRUE(table.ok()) << table.status();
  size_t checked = 0, failures = 0;
  const auto& rows = table->rows;
  for (size_t i = 0; i + 1 < rows.size() && cfi; ++i) {
    for (uint64_t addr : {rows[i].addr, rows[i + 1].addr - 1}) {
      const UnwindRule& ours = rows[i].rule;
      LibdwRule theirs = AskLibdw(cfi.get(), addr);
      ++checked;
      bool ok = theirs.covered == !ours.is_none();
      if (ok && theirs.covered) {
        ok = theirs.signal == ((ours.flags & EHP_RULE_FLAG_SIGNAL) != 0);
        if (ours.cfa_kind == EHP_CFA_REG) {
          ok = ok && theirs.cfa_is_reg && theirs.cfa_reg == ours.cfa_reg &&
               theirs.cfa_offset == ours.cfa_offset;
        } else {
          ok = ok && !theirs.cfa_is_reg;
        }
        auto reg_ok = [](int kind, int64_t off, uint8_t our_kind, int64_t our_off) {
          if (kind == EHP_RULE_CFA_OFFSET) return our_kind == EHP_RULE_CFA_OFFSET && off == our_off;
          if (kind == EHP_RULE_SAME || kind == EHP_RULE_UNDEFINED) return our_kind == kind;
          // Ours for the return address in one of x86-64's general registers;
          // unsupported otherwise (rbp, aarch64).
          if (kind == EHP_RULE_REGISTER && our_kind == EHP_RULE_REGISTER) return off == our_off;
          return our_kind == EHP_RULE_DEREF || our_kind == EHP_RULE_OTHER;
        };
        ok = ok && reg_ok(theirs.rbp_kind, theirs.rbp_offset, ours.rbp_kind, ours.rbp_offset);
        ok = ok && reg_ok(theirs.ra_kind, theirs.ra_offset, ours.ra_kind, ours.ra_offset);
        ok = ok && RbxAgrees(theirs, ours);
        if (rbx_saved) *rbx_saved += (ours.flags & EHP_RULE_FLAG_RBX_SAVED) != 0;
      }
      if (!ok && ++failures <= 10) {
        ADD_FAILURE() << path << absl::StrFormat(" at 0x%x: ours ", addr)
                      << FormatRule(ours) << "; " << Describe(theirs);
      }
    }
  }
  ::close(fd);
  EXPECT_EQ(failures, 0u) << path;
  return checked;
}

class CfaProgramVsLibdw : public ::testing::TestWithParam<std::string> {};

TEST_P(CfaProgramVsLibdw, AgreesAtEveryRowBoundary) {
  std::string path = GetParam();
  if (path[0] != '/') path = testing::TestdataPath(path);
  const size_t checked = CompareWithLibdw(path);
  RecordProperty("addresses_checked", static_cast<int>(checked));
  EXPECT_GT(checked, 10u);
}

INSTANTIATE_TEST_SUITE_P(
    RealBinaries, CfaProgramVsLibdw,
    ::testing::Values("/usr/bin/fio", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                      "/lib64/ld-linux-x86-64.so.2", testing::DebianPython(),
                      // Not libgcrypt: after DW_CFA_def_cfa_expression, libdw
                      // ignores DW_CFA_def_cfa_register (its cfi_assert wants a
                      // reg+offset rule) where libgcc and readelf switch back to
                      // reg + the last offset, which the pops that follow confirm.
                      // tests/CMakeLists.txt checks it against readelf instead.
                      "/usr/lib/x86_64-linux-gnu/libcrypto.so.3", "realign",
                      "asm_cfi", "plt_calls.stripped", "sig_handler", "libdlwork.so", "rbx_cfa"),
    [](const auto& info) {
      std::string n = info.param.substr(info.param.rfind('/') + 1);
      for (char& c : n) if (!isalnum(static_cast<unsigned char>(c))) c = '_';
      return n;
    });

// Only files with a CFA based on rbx say where each frame's caller's rbx
// is (libdw agrees, above): ld.so's trampolines and testdata/rbx_cfa; the
// rest keep their rows as few as before.
TEST(CfaProgramRbx, OnlyFilesWithACfaBasedOnRbxTrackIt) {
  for (const std::string& path : {std::string("/lib64/ld-linux-x86-64.so.2"), testing::TestdataPath("rbx_cfa"),
                                 std::string("/usr/lib/x86_64-linux-gnu/libc.so.6")}) {
    size_t saved = 0;
    CompareWithLibdw(path, &saved);
    const bool libc = path.find("libc.so") != std::string::npos;
    EXPECT_EQ(saved > 0, !libc) << path << ": " << saved << " rows with rbx in a save slot";
  }
}

TEST(ClassifyCfaExpression, RecognisesThePltExpressionsByOps) {
  // DW_OP_breg7 8; DW_OP_breg16 0; lit15; and; lit11; ge; lit3; shl; plus
  const uint8_t plt11[] = {0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22};
  WideRule r;
  ClassifyCfaExpression(plt11, &r);
  EXPECT_EQ(r.cfa_kind, EHP_CFA_PLT_LIT11);
  const uint8_t plt10[] = {0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3a, 0x2a, 0x33, 0x24, 0x22};
  ClassifyCfaExpression(plt10, &r);
  EXPECT_EQ(r.cfa_kind, EHP_CFA_PLT_LIT10);
  // The same ops spelled with const1u instead of lit11 are still the PLT rule.
  const uint8_t plt11_const[] = {0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x08, 11, 0x2a, 0x33, 0x24, 0x22};
  ClassifyCfaExpression(plt11_const, &r);
  EXPECT_EQ(r.cfa_kind, EHP_CFA_PLT_LIT11);
  // A different threshold is some other expression.
  const uint8_t other[] = {0x77, 8, 0x80, 0, 0x3f, 0x1a, 0x3c, 0x2a, 0x33, 0x24, 0x22};
  ClassifyCfaExpression(other, &r);
  EXPECT_EQ(r.cfa_kind, EHP_CFA_EXPR);
}

TEST(ClassifyCfaExpression, RecognisesDereferences) {
  // GCC's stack realignment: DW_OP_breg6 -8; DW_OP_deref.
  const uint8_t realign[] = {0x76, 0x78, 0x06};
  WideRule r;
  ClassifyCfaExpression(realign, &r);
  EXPECT_EQ(r.cfa_kind, EHP_CFA_DEREF);
  EXPECT_EQ(r.cfa_reg, EHP_REG_RBP);
  EXPECT_EQ(r.cfa_offset, -8);
  EXPECT_EQ(r.cfa_deref_add, 0);
  // OpenSSL's perlasm: DW_OP_breg7 8; DW_OP_deref; DW_OP_plus_uconst 8.
  const uint8_t openssl[] = {0x77, 0x08, 0x06, 0x23, 0x08};
  ClassifyCfaExpression(openssl, &r);
  EXPECT_EQ(r.cfa_kind, EHP_CFA_DEREF);
  EXPECT_EQ(r.cfa_reg, EHP_REG_RSP);
  EXPECT_EQ(r.cfa_offset, 8);
  EXPECT_EQ(r.cfa_deref_add, 8);
  EXPECT_EQ(FormatRule(NarrowRule(r)).substr(0, 18), "cfa=*(rsp+8)+8 rbp");
  // Truncated operand: unsupported, not misread.
  const uint8_t truncated[] = {0x77};
  ClassifyCfaExpression(truncated, &r);
  EXPECT_EQ(r.cfa_kind, EHP_CFA_EXPR);
}

}  // namespace
}  // namespace ehprof
