// Checks shared by the fuzz targets: the compact table is what the BPF
// unwinder sees, so it must answer every lookup exactly as the plain rows do.
// Failures trap rather than return, so libFuzzer records the input.
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "unwind_tables/compact_table.h"
#include "unwind_tables/table_builder.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof::fuzz {
namespace {

// Page starts are where the encoder repeats rows; a sparse table can have a
// million pages, so only tables up to this size have every start checked.
constexpr size_t kMaxPagesChecked = 4096;

bool SameRule(const ehp_rule& a, const ehp_rule& b) {
  return std::memcmp(&a, &b, sizeof(ehp_rule)) == 0;
}

void CheckLookup(const std::vector<UnwindRow>& rows, const CompactTable& table,
                 uint64_t pc) {
  ehp_rule want;
  ToCompactRule(LookupPlainRow(rows, pc), &want);
  if (!SameRule(want, CompactLookup(table, pc))) __builtin_trap();
}

}  // namespace

// Declared in each fuzz target (the fuzz/ directory holds no headers).
void CheckCompactRoundTrip(const std::vector<UnwindRow>& rows) {
  auto table = EncodeCompactTable(rows, "fuzz");
  if (!table.ok()) {
    // Valid rows may be refused only for size: too sparse, too many rules.
    if (table.status().code() != absl::StatusCode::kResourceExhausted) __builtin_trap();
    if (std::string(table.status().message()).find("fuzz") == std::string::npos) {
      __builtin_trap();
    }
    return;
  }
  uint64_t unencodable = 0;
  for (const UnwindRow& row : rows) {
    ehp_rule compact;
    if (!ToCompactRule(row.rule, &compact)) {
      ++unencodable;
    } else if (!(FromCompactRule(compact) == row.rule)) {
      __builtin_trap();  // an encodable rule must survive the round trip
    }
    CheckLookup(rows, *table, row.addr);
    if (row.addr > 0) CheckLookup(rows, *table, row.addr - 1);
  }
  if (unencodable != table->unencodable_rows) __builtin_trap();
  if (table->end <= table->start) return;
  const uint64_t pages = ((table->end - 1 - table->start) >> table->page_shift) + 1;
  if (table->num_pages() != pages) __builtin_trap();
  if (pages > kMaxPagesChecked) return;
  for (uint64_t p = 0; p < pages; ++p) {
    const uint64_t lo = table->start + (p << table->page_shift);
    CheckLookup(rows, *table, lo);
    CheckLookup(rows, *table, lo - 1);
  }
}

}  // namespace ehprof::fuzz
