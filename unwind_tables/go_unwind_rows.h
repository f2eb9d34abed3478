// Unwind rows for Go code from its pclntab: Go writes no .eh_frame for its
// own functions, and `go build -ldflags='-s -w'` drops .debug_frame, but
// every function keeps its pcsp table (how far SP is below the entry SP at
// each pc), which is all a Go frame's CFI would say: on x86-64 the CFA is
// SP + delta + 8 and the return address is at CFA - 8. Rows from it make a
// stripped Go binary walk by table like any other, frameless leaves (which
// frame pointers skip the caller of) included.
#ifndef EHPROF_UNWIND_TABLES_GO_UNWIND_ROWS_H_
#define EHPROF_UNWIND_TABLES_GO_UNWIND_ROWS_H_

#include <cstddef>
#include <vector>

#include "absl/status/statusor.h"
#include "elf/elf_file.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof {

// Sorted rows with a none row where no Go function's table speaks; empty
// for a file that is not Go (or not x86-64: Go's arm64 frames keep the
// return address at the frame's bottom, a rule these rows do not express).
// At most max_rows rows.
absl::StatusOr<std::vector<UnwindRow>> GoUnwindRows(const ElfFile& elf, size_t max_rows);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_GO_UNWIND_ROWS_H_
