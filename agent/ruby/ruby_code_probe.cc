#include "agent/ruby/ruby_code_probe.h"

#include <cstring>

namespace ehprof {

namespace {

int32_t Disp32(std::span<const uint8_t> code, size_t at) {
  int32_t v;
  std::memcpy(&v, code.data() + at, 4);
  return v;
}

}  // namespace

uint32_t CfpSizeFromCode(std::span<const uint8_t> code) {
  // add $imm8, %r64: REX.W (48/49) 83 /0 (modrm 11 000 reg) imm8; not %rsp
  // (a stack frame's teardown).
  for (size_t i = 0; i + 4 <= code.size(); ++i) {
    if ((code[i] != 0x48 && code[i] != 0x49) || code[i + 1] != 0x83 || (code[i + 2] & 0xf8) != 0xc0) continue;
    if (code[i] == 0x48 && code[i + 2] == 0xc4) continue;
    const uint32_t imm = code[i + 3];
    if (imm >= 48 && imm <= 120 && imm % 8 == 0) return imm;
  }
  return 0;
}

std::vector<RipRef> RipRefs(std::span<const uint8_t> code, uint64_t code_addr) {
  std::vector<RipRef> out;
  for (size_t i = 0; i + 6 <= code.size(); ++i) {
    const bool rex = code[i] >= 0x40 && code[i] <= 0x4f;
    const size_t op = rex ? i + 1 : i;
    if (op + 6 > code.size() || (code[op + 1] & 0xc7) != 0x05) continue;
    char use = 0;
    if (code[op] == 0x39 && !(rex && (code[i] & 8))) use = 'c';          // cmp r32, [rip+d]
    else if (code[op] == 0x8b && rex && (code[i] & 8)) use = 'm';        // mov r64, [rip+d]
    if (!use) continue;
    out.push_back({code_addr + op + 6 + static_cast<int64_t>(Disp32(code, op + 2)), use});
  }
  return out;
}

std::vector<uint64_t> BranchTargets(std::span<const uint8_t> code, uint64_t code_addr, bool calls_only) {
  std::vector<uint64_t> out;
  for (size_t i = 0; i + 5 <= code.size(); ++i) {
    if (code[i] != 0xe8 && (calls_only || code[i] != 0xe9)) continue;
    out.push_back(code_addr + i + 5 + static_cast<int64_t>(Disp32(code, i + 1)));
  }
  return out;
}

std::optional<TlsAccess> TlsAccessFromCode(std::span<const uint8_t> code, uint64_t code_addr) {
  for (size_t i = 0; i + 7 <= code.size(); ++i) {
    // lea disp32(%rip), %rdi: 48 8d 3d.
    if (code[i] != 0x48 || code[i + 1] != 0x8d || code[i + 2] != 0x3d) continue;
    TlsAccess t;
    t.got = code_addr + i + 7 + static_cast<int64_t>(Disp32(code, i + 3));
    size_t at = i + 7;
    while (at < code.size() && at < i + 7 + 16 && code[at] != 0xe8) ++at;  // the call, past its prefixes
    if (at + 5 > code.size() || code[at] != 0xe8) return std::nullopt;
    at += 5;
    // mov (%rax), %rax: 48 8b 00; mov disp8(%rax): 48 8b 40 d8; disp32: 48 8b 80 d32.
    for (; at + 3 <= code.size() && at < i + 64; ++at) {
      if (code[at] != 0x48 || code[at + 1] != 0x8b) continue;
      if (code[at + 2] == 0x00) return t;
      if (code[at + 2] == 0x40 && at + 4 <= code.size()) {
        t.disp = static_cast<int8_t>(code[at + 3]);
        return t;
      }
      if (code[at + 2] == 0x80 && at + 7 <= code.size()) {
        t.disp = Disp32(code, at + 3);
        return t;
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

}  // namespace ehprof
