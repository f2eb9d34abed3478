// The instruction-set architectures whose CFI the table builder reads:
// x86-64 and AArch64. Tables are built for either on any host (`ehprof
// tables`); the agent loads only its own machine's (NativeArch).
#ifndef EHPROF_UNWIND_TABLES_ARCH_H_
#define EHPROF_UNWIND_TABLES_ARCH_H_

#include <cstdint>
#include <optional>
#include <string>

namespace ehprof {

enum class Arch : uint8_t { kX86_64 = 0, kAarch64 = 1 };

// The architecture of an ELF e_machine, or nullopt for one not supported.
std::optional<Arch> ArchOfMachine(uint16_t e_machine);
// The architecture this program was compiled for.
constexpr Arch NativeArch() {
#if defined(__aarch64__)
  return Arch::kAarch64;
#else
  return Arch::kX86_64;
#endif
}
const char* ArchName(Arch arch);  // "x86-64", "aarch64"

// The DWARF register whose rule a row keeps besides the CFA and the return
// address: rbp (6) on x86-64, x29 (29) on AArch64.
unsigned FrameRegister(Arch arch);

// readelf's spelling of DWARF register `reg` ("rsp", "r12"; "sp", "x29").
std::string DwarfRegName(Arch arch, unsigned reg);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_ARCH_H_
