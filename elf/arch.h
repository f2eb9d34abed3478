// The instruction-set architectures an ELF file may be for here: x86-64
// and AArch64. Tables are built for either on any host (`ehprof tables`);
// the agent loads only its own machine's (NativeArch).
#ifndef EHPROF_ELF_ARCH_H_
#define EHPROF_ELF_ARCH_H_

#include <cstdint>
#include <optional>

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

}  // namespace ehprof

#endif  // EHPROF_ELF_ARCH_H_
