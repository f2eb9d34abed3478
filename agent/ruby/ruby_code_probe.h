// Reading libruby's x86-64 code for what its symbols do not say: the
// control frame's size (the `add $N` a cfp loop steps by), the globals a
// function compares and loads (global_symbols), its direct calls (the VM
// loop), and the TLS slot a function reads ruby_current_ec through (a
// general- or local-dynamic __tls_get_addr sequence). Byte patterns, not a
// disassembler: each caller checks what it finds against the file.
#ifndef EHPROF_AGENT_RUBY_RUBY_CODE_PROBE_H_
#define EHPROF_AGENT_RUBY_RUBY_CODE_PROBE_H_

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace ehprof {

// A cfp loop's step: the first `add $N, %r64` (not %rsp) with N a multiple
// of 8 in [48, 120]; 0 when there is none.
uint32_t CfpSizeFromCode(std::span<const uint8_t> code);

// The RIP-relative data addresses a function's instructions name, in
// order: (address, how: 'c' a 32-bit cmp, 'm' a 64-bit load).
struct RipRef {
  uint64_t addr;
  char use;
};
std::vector<RipRef> RipRefs(std::span<const uint8_t> code, uint64_t code_addr);

// The targets of the direct calls (and, unless calls_only, jumps) in code.
std::vector<uint64_t> BranchTargets(std::span<const uint8_t> code, uint64_t code_addr, bool calls_only);

// A __tls_get_addr call's argument: `lea disp(%rip), %rdi` (a GOT pair,
// module then offset) followed within 16 bytes by a call, and the
// displacement of the first `mov disp(%rax), %rax` after the call (0 for
// `mov (%rax), %rax`).
struct TlsAccess {
  uint64_t got = 0;  // the pair's address
  int32_t disp = 0;
};
std::optional<TlsAccess> TlsAccessFromCode(std::span<const uint8_t> code, uint64_t code_addr);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RUBY_RUBY_CODE_PROBE_H_
