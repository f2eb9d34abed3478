// execute_ex's other parts. GCC moves a function's cold paths into a range
// of their own (execute_ex.cold, in .text.unlikely) with an FDE of its own;
// execute_ex jumps there, and that code runs on execute_ex's frame and
// calls out (errors, deprecations: a user error handler's PHP runs under
// it). A stripped binary names no such part: it is found from execute_ex's
// code, its jumps out (jcc rel32, jmp rel32), and the file's CFI: a part
// is an FDE that starts inside a frame (its first instruction sets the
// CFA) with at least two of the jumps landing in it (a byte pattern that
// is not a jump lands anywhere, once).
#ifndef EHPROF_AGENT_PHP_PHP_VM_PARTS_H_
#define EHPROF_AGENT_PHP_PHP_VM_PARTS_H_

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "elf/elf_file.h"
#include "unwind_tables/cfi_functions.h"

namespace ehprof {

// The ranges of `parts` (candidates, ELF vaddrs) outside [vm_begin,
// vm_end) that the VM's code jumps into twice or more, the most jumped to
// first, at most max_parts.
std::vector<std::pair<uint64_t, uint64_t>> FindVmParts(std::span<const uint8_t> code, uint64_t vm_begin,
                                                       const CfiFunctions& parts, size_t max_parts);

// The same from the file: execute_ex's bytes and its CFI (none when either
// cannot be read).
std::vector<std::pair<uint64_t, uint64_t>> FindVmPartsInFile(const ElfFile& elf, uint64_t vm_begin,
                                                             uint64_t vm_end, size_t max_parts);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PHP_PHP_VM_PARTS_H_
