// ELF in, compact table out: the one pipeline every user of a compact table
// goes through (the agent's table loading, `ehprof tables`, the walk
// replay), so that all of them load the same table for the same file and
// options: CFI, separate debug file, AArch64 PLT and Go rows, then the
// compact encoding.
#ifndef EHPROF_UNWIND_TABLES_BUILD_COMPACT_TABLE_H_
#define EHPROF_UNWIND_TABLES_BUILD_COMPACT_TABLE_H_

#include <cstddef>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "elf/elf_file.h"
#include "unwind_tables/compact_table.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {

// Whether the plain rows stay in CompactBuild::unwind.rows after encoding:
// only a caller that prints them wants them (30 MB for libLLVM).
enum class KeepRows : bool { kNo = false, kYes = true };

struct CompactBuild {
  CompactTable compact;
  // What the build said: source(), arch, CFI counts, the debug file used,
  // warnings and refusals; its rows are empty unless KeepRows::kYes.
  UnwindTable unwind;
  size_t rows = 0;  // the plain rows encoded
};

// `name` names the file in the encoder's messages.
absl::StatusOr<CompactBuild> BuildCompactTable(const ElfFile& elf,
                                               const TableBuildOptions& options,
                                               std::string_view name,
                                               KeepRows keep = KeepRows::kNo);
// ElfFile::Open(path), then the above.
absl::StatusOr<CompactBuild> BuildCompactTableFromPath(const std::string& path,
                                                       const TableBuildOptions& options,
                                                       KeepRows keep = KeepRows::kNo);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_BUILD_COMPACT_TABLE_H_
