#include "elf/arch.h"

#include <elf.h>

namespace ehprof {

std::optional<Arch> ArchOfMachine(uint16_t e_machine) {
  switch (e_machine) {
    case EM_X86_64: return Arch::kX86_64;
    case EM_AARCH64: return Arch::kAarch64;
    default: return std::nullopt;
  }
}

const char* ArchName(Arch arch) { return arch == Arch::kAarch64 ? "aarch64" : "x86-64"; }

}  // namespace ehprof
