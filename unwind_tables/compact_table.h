// The compact unwind table: what goes into the BPF maps (layout in
// bpf/ehprof_abi.h), and its user-space lookup running the BPF search.
//
// Cost per row: 2 bytes of address + 1 byte of palette index, plus per page
// (64 KiB of code by default) 8 bytes, 32 bytes of bucket starts and its
// palette, plus the distinct rules. The page size shrinks (down to 256 bytes) only when a page would
// need more than 256 distinct rules.
#ifndef EHPROF_UNWIND_TABLES_COMPACT_TABLE_H_
#define EHPROF_UNWIND_TABLES_COMPACT_TABLE_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/ehprof_abi.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof {

struct CompactTable {
  uint64_t start = 0;  // address of page 0 (the first row)
  uint64_t end = 0;    // the final none row: lookups at or past it miss
  uint32_t page_shift = EHP_PAGE_SHIFT_MAX;
  std::vector<ehp_page> pages;  // first_row / first_palette relative to the table
  std::vector<ehp_buckets> buckets;  // one per page
  std::vector<uint8_t> rows;  // EHP_ROW_BYTES per row
  std::vector<uint16_t> palette;
  std::vector<ehp_rule> rules;
  // Rows whose offsets did not fit ehp_rule's fields; their rule was
  // replaced by an unsupported one (the walker stops there with a reason).
  uint64_t unencodable_rows = 0;

  uint64_t bytes() const;  // everything above, as it would sit in maps
  size_t num_pages() const { return pages.size(); }
  size_t num_rows() const { return rows.size() / EHP_ROW_BYTES; }
};

absl::StatusOr<CompactTable> EncodeCompactTable(const std::vector<UnwindRow>& rows,
                                                std::string_view name);

// The rule governing pc; a zeroed rule (EHP_CFA_NONE) when none does.
ehp_rule CompactLookup(const CompactTable& table, uint64_t pc);

// Conversions between the two rule forms. ToCompactRule returns false when
// an offset does not fit (the result is then an unsupported rule).
// A rule whose save slots are too far from the CFA for s16 but near its
// register is encoded in the second form (EHP_RULE_FLAG_SAVED_FROM_REG);
// ToPlainCompactRule is the first form only.
bool ToCompactRule(const UnwindRule& in, ehp_rule* out);
bool ToPlainCompactRule(const UnwindRule& in, ehp_rule* out);
UnwindRule FromCompactRule(const ehp_rule& r);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_COMPACT_TABLE_H_
