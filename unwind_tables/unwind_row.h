// The uncompressed unwind row: what the compact table must reproduce exactly.
#ifndef EHPROF_UNWIND_TABLES_UNWIND_ROW_H_
#define EHPROF_UNWIND_TABLES_UNWIND_ROW_H_

#include <cstdint>
#include <string>

#include "bpf/ehprof_abi.h"
#include "elf/arch.h"

namespace ehprof {

// Kinds use the ABI enums (ehp_cfa_kind, ehp_reg_kind). Offsets are kept at
// full width here; the compact encoder checks that they fit.
// A rule for the CFA, rbp (x29) and the return address, with offsets of
// type Offset.
template <typename Offset>
struct BasicRule {
  Offset cfa_offset = 0;
  Offset cfa_deref_add = 0;  // EHP_CFA_DEREF: added after the load
  Offset rbp_offset = 0;
  Offset ra_offset = 0;
  uint8_t cfa_kind = EHP_CFA_NONE;
  uint8_t cfa_reg = 0;
  uint8_t rbp_kind = EHP_RULE_SAME;
  uint8_t rbp_reg = 0;
  uint8_t ra_kind = EHP_RULE_UNDEFINED;
  uint8_t flags = 0;

  bool operator==(const BasicRule&) const = default;
  static BasicRule None() { return BasicRule{}; }
  bool is_none() const { return cfa_kind == EHP_CFA_NONE; }
};

// A row's rule. Offsets are 32-bit: the BPF rule (ehp_rule) holds at most
// that much, and a table is built from millions of rows (libLLVM: 950,000),
// so the row's width is the builder's memory: 32 bytes a row, not 48. CFI
// values beyond 32 bits are made unsupported rules (NarrowRule) where the
// CFA program produces them, never cut short.
using UnwindRule = BasicRule<int32_t>;
// The CFA program's state at the CFI's own width (offsets are factored
// values times the data alignment: 64-bit), narrowed into each row.
using WideRule = BasicRule<int64_t>;

struct UnwindRow {
  uint64_t addr = 0;
  UnwindRule rule;
  bool operator==(const UnwindRow&) const = default;
};
static_assert(sizeof(UnwindRow) == 32, "a row's width is the table builder's memory");

// The row's rule: an offset that does not fit 32 bits makes its part
// unsupported (the CFA an expression, rbp or the return address "other"),
// as the compact encoding would have for anything past its own widths.
UnwindRule NarrowRule(const WideRule& w);

// cfa = cfa_reg + cfa_offset, the frame register as it was, the return
// address by ra_kind (EHP_RULE_CFA_OFFSET: at cfa + ra_offset; aarch64's
// EHP_RULE_SAME: still in x30): the rules made from code, not CFI.
UnwindRule RegisterCfaRule(uint8_t cfa_reg, int32_t cfa_offset, uint8_t ra_kind, int32_t ra_offset = 0);

std::string FormatRule(const UnwindRule& rule, Arch arch = Arch::kX86_64);
// "%016x " + FormatRule.
std::string FormatRow(const UnwindRow& row, Arch arch = Arch::kX86_64);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_UNWIND_ROW_H_
