#include "unwind_tables/unwind_row.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "unwind_tables/dwarf_registers.h"

namespace ehprof {
namespace {

std::string Signed(int64_t v) {
  return v < 0 ? absl::StrCat("-", -static_cast<uint64_t>(v)) : absl::StrCat("+", v);
}

std::string Deref(Arch arch, unsigned reg, int64_t off) {
  return absl::StrCat("*(", DwarfRegName(arch, reg), Signed(off), ")");
}

std::string RegRule(Arch arch, uint8_t kind, uint8_t reg, int64_t off) {
  switch (kind) {
    case EHP_RULE_SAME: return "same";
    case EHP_RULE_CFA_OFFSET: return absl::StrCat("cfa", Signed(off));
    case EHP_RULE_UNDEFINED: return "undef";
    case EHP_RULE_DEREF: return Deref(arch, reg, off);
    case EHP_RULE_REGISTER: return DwarfRegName(arch, static_cast<unsigned>(off));
    default: return "other";
  }
}

bool Fits32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

}  // namespace

UnwindRule NarrowRule(const WideRule& w) {
  UnwindRule r;
  r.cfa_kind = w.cfa_kind;
  r.cfa_reg = w.cfa_reg;
  r.flags = w.flags;
  if (w.cfa_kind == EHP_CFA_REG || w.cfa_kind == EHP_CFA_DEREF) {
    if (Fits32(w.cfa_offset) && Fits32(w.cfa_deref_add)) {
      r.cfa_offset = static_cast<int32_t>(w.cfa_offset);
      r.cfa_deref_add = static_cast<int32_t>(w.cfa_deref_add);
    } else {
      r.cfa_kind = EHP_CFA_EXPR;
      r.cfa_reg = 0;
    }
  }
  r.rbp_kind = w.rbp_kind;
  r.rbp_reg = w.rbp_reg;
  if (w.rbp_kind == EHP_RULE_CFA_OFFSET || w.rbp_kind == EHP_RULE_DEREF) {
    if (Fits32(w.rbp_offset)) {
      r.rbp_offset = static_cast<int32_t>(w.rbp_offset);
    } else {
      r.rbp_kind = EHP_RULE_OTHER;
      r.rbp_reg = 0;
    }
  }
  r.ra_kind = w.ra_kind;
  if (w.ra_kind == EHP_RULE_REGISTER) r.ra_offset = static_cast<int32_t>(w.ra_offset);  // a register number
  if (w.ra_kind == EHP_RULE_CFA_OFFSET) {
    if (Fits32(w.ra_offset)) {
      r.ra_offset = static_cast<int32_t>(w.ra_offset);
    } else {
      r.ra_kind = EHP_RULE_OTHER;
    }
  }
  return r;
}

UnwindRule RegisterCfaRule(uint8_t cfa_reg, int32_t cfa_offset, uint8_t ra_kind, int32_t ra_offset) {
  UnwindRule r;
  r.cfa_kind = EHP_CFA_REG;
  r.cfa_reg = cfa_reg;
  r.cfa_offset = cfa_offset;
  r.rbp_kind = EHP_RULE_SAME;
  r.ra_kind = ra_kind;
  r.ra_offset = ra_offset;
  return r;
}

std::string FormatRule(const UnwindRule& r, Arch arch) {
  std::string cfa;
  switch (r.cfa_kind) {
    case EHP_CFA_NONE: return "none";
    case EHP_CFA_REG: cfa = absl::StrCat(DwarfRegName(arch, r.cfa_reg), Signed(r.cfa_offset)); break;
    case EHP_CFA_PLT_LIT11: cfa = "plt"; break;
    case EHP_CFA_PLT_LIT10: cfa = "plt10"; break;
    case EHP_CFA_DEREF:
      cfa = Deref(arch, r.cfa_reg, r.cfa_offset);
      if (r.cfa_deref_add != 0) cfa += Signed(r.cfa_deref_add);
      break;
    default: cfa = "expr"; break;
  }
  const bool a64 = arch == Arch::kAarch64;
  std::string ra = RegRule(arch, r.ra_kind, 0, r.ra_offset);
  if (a64 && r.ra_kind == EHP_RULE_SAME) ra = "x30";
  std::string out = absl::StrCat("cfa=", cfa, " ", DwarfRegName(arch, FrameRegister(arch)), "=",
                                 RegRule(arch, r.rbp_kind, r.rbp_reg, r.rbp_offset), " ra=", ra);
  if (r.flags & EHP_RULE_FLAG_RBX_SAVED) absl::StrAppend(&out, " rbx=cfa", Signed(r.cfa_deref_add));
  if (r.flags & EHP_RULE_FLAG_RBX_SAME) out += " rbx=same";
  if (r.flags & EHP_RULE_FLAG_SIGNAL) out += " signal";
  if (r.flags & EHP_RULE_FLAG_RA_SIGNED) out += " pac";
  return out;
}

std::string FormatRow(const UnwindRow& row, Arch arch) {
  return absl::StrFormat("%016x %s", row.addr, FormatRule(row.rule, arch));
}

}  // namespace ehprof
