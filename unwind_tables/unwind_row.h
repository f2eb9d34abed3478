// The uncompressed unwind row: what the compact table must reproduce exactly.
#ifndef EHPROF_UNWIND_TABLES_UNWIND_ROW_H_
#define EHPROF_UNWIND_TABLES_UNWIND_ROW_H_

#include <cstdint>
#include <string>

#include "bpf/ehprof_abi.h"
#include "unwind_tables/arch.h"

namespace ehprof {

// Kinds use the ABI enums (ehp_cfa_kind, ehp_reg_kind). Offsets are kept at
// full width here; the compact encoder checks that they fit.
struct UnwindRule {
  int64_t cfa_offset = 0;
  int64_t cfa_deref_add = 0;  // EHP_CFA_DEREF: added after the load
  int64_t rbp_offset = 0;
  int64_t ra_offset = 0;
  uint8_t cfa_kind = EHP_CFA_NONE;
  uint8_t cfa_reg = 0;
  uint8_t rbp_kind = EHP_RULE_SAME;
  uint8_t rbp_reg = 0;
  uint8_t ra_kind = EHP_RULE_UNDEFINED;
  uint8_t flags = 0;

  bool operator==(const UnwindRule&) const = default;
  static UnwindRule None() { return UnwindRule{}; }
  bool is_none() const { return cfa_kind == EHP_CFA_NONE; }
};

// Governs [addr, next row's addr).
struct UnwindRow {
  uint64_t addr = 0;
  UnwindRule rule;
  bool operator==(const UnwindRow&) const = default;
};

// "cfa=rsp+16 rbp=same ra=cfa-8" (plus " signal"), or "none". On aarch64
// the frame register is x29 and a return address still in the link
// register reads "ra=x30": "cfa=sp+32 x29=cfa-32 ra=cfa-24" (plus " pac"
// where the return address is signed).
std::string FormatRule(const UnwindRule& rule, Arch arch = Arch::kX86_64);
// "%016x " + FormatRule.
std::string FormatRow(const UnwindRow& row, Arch arch = Arch::kX86_64);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_UNWIND_ROW_H_
