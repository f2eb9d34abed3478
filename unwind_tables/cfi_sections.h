// Where a file's CFI is: its .eh_frame (by section header, or through
// PT_GNU_EH_FRAME when there are none) and its .debug_frame.
#ifndef EHPROF_UNWIND_TABLES_CFI_SECTIONS_H_
#define EHPROF_UNWIND_TABLES_CFI_SECTIONS_H_

#include <optional>

#include "absl/status/statusor.h"
#include "unwind_tables/cfi_records.h"
#include "elf/elf_file.h"

namespace ehprof {

// nullopt when the file has none (or only a NOBITS placeholder: a separate
// debug file's); an error when the header points somewhere impossible.
absl::StatusOr<std::optional<CfiSectionRef>> LocateEhFrame(const ElfFile& elf);
absl::StatusOr<std::optional<CfiSectionRef>> LocateDebugFrame(const ElfFile& elf);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_CFI_SECTIONS_H_
