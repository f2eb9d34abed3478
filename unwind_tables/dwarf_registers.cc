#include "unwind_tables/dwarf_registers.h"

#include <iterator>

#include "absl/strings/str_cat.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

unsigned FrameRegister(Arch arch) {
  return arch == Arch::kAarch64 ? unsigned{EHP_A64_REG_X29} : unsigned{EHP_REG_RBP};
}

std::string DwarfRegName(Arch arch, unsigned reg) {
  if (arch == Arch::kAarch64) {
    if (reg <= 30) return absl::StrCat("x", reg);
    if (reg == EHP_A64_REG_SP) return "sp";
    if (reg >= 64 && reg <= 95) return absl::StrCat("v", reg - 64);
    return absl::StrCat("r", reg);
  }
  static constexpr const char* kNames[] = {
      "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8",
      "r9",  "r10", "r11", "r12", "r13", "r14", "r15", "rip"};
  if (reg < std::size(kNames)) return kNames[reg];
  return absl::StrCat("r", reg);
}

}  // namespace ehprof
