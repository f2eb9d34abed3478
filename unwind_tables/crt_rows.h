// Rows for the functions GCC's crtbegin*.o puts at the start of .text
// (deregister_tm_clones, register_tm_clones, __do_global_dtors_aux,
// frame_dummy): crtstuff.c is compiled without unwind tables, so every
// GCC-linked x86-64 file has a CFI gap there. __do_global_dtors_aux runs a
// library's static destructors at exit (through __cxa_finalize), and
// frame_dummy runs as the file is loaded; a sample under either stops at
// "no CFI for pc" without these rows. The code is read, not assumed: only
// a gap made entirely of the few instructions those functions use gets
// rows, its frame tracked through `push %rbp`, `mov %rsp,%rbp` and
// `pop %rbp`, and every jump inside it landing where the frame is the
// jump's own.
#ifndef EHPROF_UNWIND_TABLES_CRT_ROWS_H_
#define EHPROF_UNWIND_TABLES_CRT_ROWS_H_

#include <cstdint>
#include <vector>

#include "elf/elf_file.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof {

// The longest gap looked at: crtstuff's four functions take ~200 bytes.
// Where in .text they lie depends on the link (after every object's
// .text.unlikely parts, so megabytes in), so every gap is looked at.
inline constexpr uint64_t kCrtGapMax = 512;

// Sorted rows over each CFI gap of `rows` (the file's CFI, sorted, gaps
// as none rows) in .text whose code is that shape, each closed by a none
// row; empty for other architectures, other code, and a file without CFI
// (walked by frame pointers instead).
std::vector<UnwindRow> CrtRows(const ElfFile& elf, const std::vector<UnwindRow>& rows);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_CRT_ROWS_H_
