// Rows for x86-64's .init and .fini, which have no CFI: the C library's
// crti.o opens each with a fixed prologue and crtn.o closes it (glibc:
// `sub $8,%rsp` ... `add $8,%rsp; ret`, `endbr64` first where CET is on;
// musl: `push %rax` ... `pop %rax; ret`), and what other objects place
// between are calls (OpenSSL's `call OPENSSL_cpuid_setup` in libcrypto's
// .init), which leave rsp as it was. Without these rows a sample at _init's
// first instruction (the page fault of its first touch, under ld.so's
// call_init) or in a function .init calls stops at "no CFI for pc, frame
// pointer implausible".
#ifndef EHPROF_UNWIND_TABLES_INIT_FINI_ROWS_H_
#define EHPROF_UNWIND_TABLES_INIT_FINI_ROWS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "elf/elf_file.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof {

// Sorted rows over each of .init and .fini whose code has exactly that
// shape (a prologue, then only the instructions crti.o's PREINIT check and
// calls are made of, then the epilogue ending the section), each range
// closed by a none row; empty for other architectures, other shapes, and
// sections not mapped.
absl::StatusOr<std::vector<UnwindRow>> InitFiniRows(const ElfFile& elf);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_INIT_FINI_ROWS_H_
