// Rows for a file's entry point when no CFI covers it. The kernel starts a
// program at e_entry with nothing above it, so a return address there is
// the bottom of the stack. glibc's ld.so has no FDE for its _start
// (RTLD_START: `mov %rsp,%rdi; call _dl_start`, then _dl_start_user, which
// calls _dl_init and jumps to the program's entry): without these rows a
// sample taken while ld.so loads a program (every exec's first
// milliseconds) stops at "no CFI for pc" with a frame pointer the kernel
// zeroed, "frame pointer implausible", instead of ending there. An entry
// point that has CFI (crt1's _start, with an undefined return-address
// rule) keeps it.
#ifndef EHPROF_UNWIND_TABLES_ENTRY_POINT_ROWS_H_
#define EHPROF_UNWIND_TABLES_ENTRY_POINT_ROWS_H_

#include <cstdint>
#include <vector>

#include "elf/elf_file.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof {

// How far past e_entry the rows reach at most: glibc's RTLD_START is 64
// bytes on x86_64 (_start and _dl_start_user, up to the next FDE), and a
// gap after it may hold other code without CFI that is not a bottom frame.
inline constexpr uint64_t kEntryPointBytes = 64;

// Sorted rows saying "bottom of the stack" over [e_entry, end) (from
// e_entry - 1 where no CFI covers that byte either: execve's return), end the
// next row of `rows` (the file's CFI, sorted) or e_entry +
// kEntryPointBytes, whichever is first, the last a none row; empty when
// the file has no entry point, no CFI at all (frame pointers are used
// there instead) or CFI at its entry point.
std::vector<UnwindRow> EntryPointRows(const ElfFile& elf, const std::vector<UnwindRow>& rows);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_ENTRY_POINT_ROWS_H_
