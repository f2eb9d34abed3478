#include "unwind_tables/go_unwind_rows.h"

#include "base/status_macros.h"
#include "elf/go_pclntab_finder.h"

namespace ehprof {
namespace {

// x86-64: the CALL pushed the return address, 8 bytes above the entry SP.
constexpr int64_t kReturnAddressBytes = 8;
// A delta past this is no Go frame: reflectcall's runtime.call1073741824
// has the largest, 1 GiB (the compact encoding says which rows it cannot
// hold, as for any CFI).
constexpr int32_t kMaxDelta = (1 << 30) + 64;

UnwindRule GoRule(int32_t delta, uint8_t flags) {
  UnwindRule r;
  r.cfa_kind = EHP_CFA_REG;
  r.cfa_reg = EHP_REG_RSP;
  r.cfa_offset = static_cast<int32_t>(delta + kReturnAddressBytes);  // delta <= kMaxDelta
  r.ra_kind = EHP_RULE_CFA_OFFSET;
  r.ra_offset = static_cast<int32_t>(-kReturnAddressBytes);
  // The saved frame pointer's slot differs between Go's prologue forms
  // (and is not yet written for an instruction or two): left as is, which
  // Go frames never need, their CFA being SP-based.
  r.rbp_kind = EHP_RULE_SAME;
  // Where Go's own traceback ends, so does the walk: at the outermost
  // frame, and at a function that moves SP to another stack (pcsp then
  // speaks of a stack SP no longer points into).
  if (flags & (GoPclntab::kFuncFlagTopFrame | GoPclntab::kFuncFlagSpWrite)) {
    r.ra_kind = EHP_RULE_UNDEFINED;
    r.ra_offset = 0;
  }
  return r;
}

}  // namespace

absl::StatusOr<std::vector<UnwindRow>> GoUnwindRows(const ElfFile& elf, size_t max_rows) {
  std::vector<UnwindRow> rows;
  if (elf.arch() != Arch::kX86_64) return rows;
  EHP_ASSIGN_OR_RETURN(std::optional<GoPclntab> table, FindGoPclntab(elf));
  if (!table) return rows;
  uint64_t covered = 0;
  absl::Status st = table->ForEachSpDelta(
      [&](uint64_t start, uint64_t end, int32_t delta, uint8_t flags) {
        if (start < covered) return;  // out of order: a hostile table
        if (!rows.empty() && start > covered) rows.push_back({covered, UnwindRule::None()});
        const UnwindRule rule = delta >= -kReturnAddressBytes && delta <= kMaxDelta ? GoRule(delta, flags)
                                                                   : UnwindRule::None();
        if (rows.empty() || !(rows.back().rule == rule)) rows.push_back({start, rule});
        covered = end;
      },
      max_rows);
  if (!st.ok()) return st;
  if (!rows.empty()) rows.push_back({covered, UnwindRule::None()});
  return rows;
}

}  // namespace ehprof
