// The DWARF registers the unwind rows speak of, per architecture.
#ifndef EHPROF_UNWIND_TABLES_DWARF_REGISTERS_H_
#define EHPROF_UNWIND_TABLES_DWARF_REGISTERS_H_

#include <string>

#include "elf/arch.h"

namespace ehprof {

// The DWARF register whose rule a row keeps besides the CFA and the return
// address: rbp (6) on x86-64, x29 (29) on AArch64.
unsigned FrameRegister(Arch arch);

// readelf's spelling of DWARF register `reg` ("rsp", "r12"; "sp", "x29").
std::string DwarfRegName(Arch arch, unsigned reg);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_DWARF_REGISTERS_H_
