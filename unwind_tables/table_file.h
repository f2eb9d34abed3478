// The on-disk form of a built compact table (the table cache's entries):
// a fixed header naming the file it was built from and the layout it was
// built for, a CRC-32 of the payload, then the table's arrays as they go
// into the BPF maps. Parsing treats the bytes as hostile: every count is
// checked against the length, the CRC against the payload, and the result
// against the compact table's invariants (compact_table_check.h).
#ifndef EHPROF_UNWIND_TABLES_TABLE_FILE_H_
#define EHPROF_UNWIND_TABLES_TABLE_FILE_H_

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "unwind_tables/compact_table.h"

namespace ehprof {

// What a table was built from. The build-id names the contents; inode,
// size and mtime tell a rebuilt file with the same build-id (or none) apart.
struct TableFileKey {
  std::string build_id;  // lowercase hex, may be empty
  uint64_t inode = 0;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  bool operator==(const TableFileKey&) const = default;
};

struct StoredTable {
  CompactTable table;
  uint64_t plain_rows = 0;  // rows before compaction (for the summary)
};

// Bumped whenever what a build produces for the same file changes (the CFI
// interpreter, the encoder): older entries are then rebuilt.
inline constexpr uint32_t kTableBuilderVersion = 9;  // 2: Go pclntab rows; 3: entry-point rows; 4: from e_entry - 1; 5: ra in a register; 6: rbx tracked; 7: .init/.fini rows; 8: crtbegin rows; 9: crtbegin rows past a zero fill

std::string SerializeTable(const TableFileKey& key, const StoredTable& t);

// The builder version and ABI together, as one number: a cache names its
// entries with it, so two ehprof versions on one host (an upgrade, a bench
// of two builds) each keep their own entries instead of rebuilding what
// the other wrote in turn.
uint32_t TableFormatTag();

// The table in `bytes` if it was written for `key` by this builder version
// and this ABI, intact; an error naming `name` and what was wrong otherwise.
absl::StatusOr<StoredTable> ParseTable(std::span<const uint8_t> bytes, const TableFileKey& key,
                                       const std::string& name);

// `bytes` with the header's CRC recomputed over its payload (unchanged when
// shorter than a header): lets a fuzzer's mutations of the payload reach
// the structural checks behind the checksum.
std::string WithTableChecksumFixed(std::span<const uint8_t> bytes);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_TABLE_FILE_H_
