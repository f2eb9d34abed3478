#include "unwind_tables/build_compact_table.h"

#include <utility>
#include <vector>

#include "base/status_macros.h"

namespace ehprof {

absl::StatusOr<CompactBuild> BuildCompactTable(const ElfFile& elf,
                                               const TableBuildOptions& options,
                                               std::string_view name, KeepRows keep) {
  CompactBuild built;
  EHP_ASSIGN_OR_RETURN(built.unwind, BuildUnwindTable(elf, options));
  built.rows = built.unwind.rows.size();
  EHP_ASSIGN_OR_RETURN(built.compact, EncodeCompactTable(built.unwind.rows, name));
  // Freed before the caller stores or caches the table, so the build's
  // peak is the rows or what is made of them, not both.
  if (keep == KeepRows::kNo) std::vector<UnwindRow>().swap(built.unwind.rows);
  return built;
}

absl::StatusOr<CompactBuild> BuildCompactTableFromPath(const std::string& path,
                                                       const TableBuildOptions& options,
                                                       KeepRows keep) {
  EHP_ASSIGN_OR_RETURN(ElfFile elf, ElfFile::Open(path));
  return BuildCompactTable(elf, options, path, keep);
}

}  // namespace ehprof
