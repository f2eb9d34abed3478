// ELF in, sorted unwind rows out. Pure: no BPF, no process state, so it is
// tested and fuzzed without privileges.
#ifndef EHPROF_UNWIND_TABLES_TABLE_BUILDER_H_
#define EHPROF_UNWIND_TABLES_TABLE_BUILDER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "elf/elf_file.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof {

// 16 times libLLVM's 1 million rows, 4 times huge_ehframe's (400,000
// FDEs); about 50 MB as a compact table (most of the default
// --table-memory) and 800 MB while it is built. A hostile .eh_frame packs a
// row into 3 bytes: the cap, not the file's size, bounds the rows' memory.
inline constexpr size_t kMaxTableRows = size_t{1} << 24;

struct TableBuildOptions {
  // Look for a separate debug file when the ELF has no .debug_frame.
  bool find_debug_file = true;
  // Prefix for absolute debug-file lookups (/proc/PID/root).
  std::string debug_root;
  // More rows (or FDEs) than this in a section fail the build (tests lower
  // it).
  size_t max_rows = kMaxTableRows;
  // Build tables of the other architecture too (`ehprof tables`); the agent
  // loads only its own machine's, so for it a foreign ELF is an error.
  bool any_arch = false;
  // Rows from Go's pclntab (go_unwind_rows.h) where no CFI covers an
  // address: Go writes no .eh_frame for its own code. Off only to compare
  // against the CFI alone.
  bool go_rows = true;
  // Rows marking the entry point the bottom of the stack where no CFI
  // covers it (entry_point_rows.h). Off only to compare against the CFI
  // alone.
  bool entry_point_rows = true;
  // Rows for x86-64's .init and .fini from crti/crtn's code
  // (init_fini_rows.h). Off only to compare against the CFI alone.
  bool init_fini_rows = true;
  // Rows for crtstuff's functions at the start of x86-64's .text, read
  // from their code (crt_rows.h). Off only to compare against the CFI alone.
  bool crt_rows = true;
};

struct UnwindTable {
  // Sorted by address, no two neighbours with equal rules; gaps between
  // FDEs are explicit EHP_CFA_NONE rows and the last row is always one.
  std::vector<UnwindRow> rows;
  uint64_t cfi_rows = 0;  // rows the CFI programs define (readelf's count)
  uint64_t fdes = 0;
  bool from_eh_frame = false;
  bool from_debug_frame = false;
  bool plt_rows = false;  // aarch64: rows made for .plt, which has no CFI
  bool go_rows = false;   // rows from Go's pclntab are used
  bool entry_point_rows = false;  // e_entry had no CFI: marked the bottom (entry_point_rows.h)
  bool init_fini_rows = false;    // x86-64: rows made for .init/.fini, which have no CFI (init_fini_rows.h)
  bool crt_rows = false;          // x86-64: rows made for crtstuff's functions, which have no CFI (crt_rows.h)
  Arch arch = Arch::kX86_64;
  std::string debug_file;  // the separate debug file used, if any
  // Problems that did not stop the build (overlapping FDEs, a separate debug
  // file that could not be read, ...), each naming file and section.
  std::vector<std::string> warnings;
  // Those of the warnings that say a part of the input was refused as
  // unsafe to read (a FIFO, device or symlink where a debug file was
  // looked for; a section that would expand past the cap): the file's
  // owner may have put it there, and the agent says so.
  std::vector<std::string> refused;

  std::string source() const;  // "eh_frame", "eh_frame+debug_frame", "gopclntab", ...
};

absl::StatusOr<UnwindTable> BuildUnwindTable(const ElfFile& elf,
                                             const TableBuildOptions& options = {});
absl::StatusOr<UnwindTable> BuildUnwindTableFromPath(
    const std::string& path, const TableBuildOptions& options = {});

// The row governing `addr` in sorted `rows` (binary search), or a none rule.
UnwindRule LookupPlainRow(const std::vector<UnwindRow>& rows, uint64_t addr);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_TABLE_BUILDER_H_
