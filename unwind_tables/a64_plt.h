// Rows for AArch64's .plt, which ld emits without CFI: a PLT stub (PLTn:
// adrp/ldr/add/br x17) touches neither sp nor x30, so the caller's pc is
// still in x30 and its sp is this sp; PLT0 (the lazy-binding entry) pushes
// x16 and x30 first (`stp x16, x30, [sp, #-16]!`), so after that store
// the CFA is sp+16 while x30 still holds the return address.
#ifndef EHPROF_UNWIND_TABLES_A64_PLT_H_
#define EHPROF_UNWIND_TABLES_A64_PLT_H_

#include <vector>

#include "absl/status/statusor.h"
#include "elf/elf_file.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof {

// Sorted rows covering the file's .plt, the last a none row; empty when the
// file is not AArch64 or has no .plt.
absl::StatusOr<std::vector<UnwindRow>> Aarch64PltRows(const ElfFile& elf);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_A64_PLT_H_
