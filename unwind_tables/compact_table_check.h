// The invariants of a CompactTable that its lookups (the BPF walker's and
// CompactLookup) rely on, checked for a table that did not come straight
// from EncodeCompactTable: one read back from the on-disk cache
// (table_cache.h) feeds a BPF program and is never trusted blindly.
#ifndef EHPROF_UNWIND_TABLES_COMPACT_TABLE_CHECK_H_
#define EHPROF_UNWIND_TABLES_COMPACT_TABLE_CHECK_H_

#include <string_view>

#include "absl/status/status.h"
#include "unwind_tables/compact_table.h"

namespace ehprof {

// OK when the table is what EncodeCompactTable could have made: page count
// from start/end/shift, pages' rows and palettes contiguous and in bounds,
// each page's rows strictly increasing from offset 0, bucket starts exact,
// palette entries naming existing rules, rules of known kinds. Otherwise an
// error naming `name` and the first broken invariant.
absl::Status ValidateCompactTable(const CompactTable& t, const std::string& name);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_COMPACT_TABLE_CHECK_H_
