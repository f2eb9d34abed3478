#include "unwind_tables/cfi_functions.h"

#include <algorithm>

#include "unwind_tables/cfi_records.h"
#include "unwind_tables/cfi_sections.h"
#include "base/status_macros.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {

absl::StatusOr<CfiFunctions> CfiFunctions::FromElf(const ElfFile& elf) {
  EHP_ASSIGN_OR_RETURN(std::optional<CfiSectionRef> ref, LocateEhFrame(elf));
  if (!ref) {
    EHP_ASSIGN_OR_RETURN(ref, LocateDebugFrame(elf));
  }
  if (!ref) return CfiFunctions();
  // The same bound as a table build: a hostile section's FDE count is what
  // would otherwise size this.
  ref->max_fdes = kMaxTableRows;
  EHP_ASSIGN_OR_RETURN(CfiRecords recs, ParseCfiRecords(*ref));
  std::vector<FunctionRange> ranges;
  ranges.reserve(recs.fdes.size());
  for (const Fde& f : recs.fdes) {
    if (f.pc_end > f.pc_begin) ranges.push_back({f.pc_begin, f.pc_end});
  }
  return FromRanges(std::move(ranges));
}

CfiFunctions CfiFunctions::FromRanges(std::vector<FunctionRange> ranges) {
  std::stable_sort(ranges.begin(), ranges.end(),
                   [](const FunctionRange& a, const FunctionRange& b) { return a.begin < b.begin; });
  CfiFunctions out;
  out.ranges_.reserve(ranges.size());
  for (const FunctionRange& r : ranges) {
    // An FDE overlapping an earlier one (malformed CFI) is left out: its
    // start would name code that the earlier function holds.
    if (!out.ranges_.empty() && r.begin < out.ranges_.back().end) continue;
    out.ranges_.push_back(r);
  }
  return out;
}

std::optional<FunctionRange> CfiFunctions::Find(uint64_t vaddr) const {
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), vaddr,
                             [](uint64_t a, const FunctionRange& r) { return a < r.begin; });
  if (it == ranges_.begin()) return std::nullopt;
  --it;
  if (vaddr >= it->end) return std::nullopt;
  return *it;
}

}  // namespace ehprof
