// Finds Go's pclntab in an opened ELF file, whether or not the file keeps
// its section headers: what the symbolizer reads Go names from and the table
// builder reads Go's stack-pointer deltas from.
#ifndef EHPROF_ELF_GO_PCLNTAB_FINDER_H_
#define EHPROF_ELF_GO_PCLNTAB_FINDER_H_

#include <optional>

#include "absl/status/statusor.h"
#include "elf/elf_file.h"
#include "elf/go_pclntab.h"

namespace ehprof {

// The pclntab of one opened ELF file, found in it: the .gopclntab section,
// else the pcHeader by its magic in a read-only segment; the text start
// from the moduledata, .text or the executable segment when the header's
// is 0 (Go 1.26, a PIE);
// moduledata.gofunc (for the inline trees) from the moduledata in a
// writable segment that points at the header. nullopt for a file that is
// not Go; an error for a Go table that does not parse. The table reads
// `elf`'s bytes: keep it alive, and in place, while the table is used.
absl::StatusOr<std::optional<GoPclntab>> FindGoPclntab(const ElfFile& elf);

}  // namespace ehprof

#endif  // EHPROF_ELF_GO_PCLNTAB_FINDER_H_
