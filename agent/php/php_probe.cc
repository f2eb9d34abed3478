#include "agent/php/php_probe.h"

#include <cstring>

namespace ehprof {

namespace {

int32_t Disp32(std::span<const uint8_t> b, size_t at) {
  int32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

// REX prefix bits: W 8, R 4, B 1 (X must be 0: no SIB here).
bool IsRex(uint8_t b) { return (b & 0xf0) == 0x40 && (b & 0x2) == 0; }

}  // namespace

std::vector<X86Load> FindLoads(std::span<const uint8_t> code) {
  std::vector<X86Load> out;
  for (size_t i = 0; i + 3 <= code.size(); ++i) {
    size_t op = i;
    uint8_t rex = 0;
    if (IsRex(code[i])) rex = code[i], op = i + 1;
    if (op + 2 > code.size() || code[op] != 0x8b) continue;
    const uint8_t modrm = code[op + 1];
    const int mod = modrm >> 6, rm = modrm & 7;
    if (mod == 3 || rm == 4 || (mod == 0 && rm == 5)) continue;  // register, SIB, rip-relative
    X86Load l;
    l.at = i;
    l.wide = (rex & 8) != 0;
    l.dst = ((modrm >> 3) & 7) | ((rex & 4) ? 8 : 0);
    l.base = rm | ((rex & 1) ? 8 : 0);
    const size_t d = op + 2;
    if (mod == 1 && d + 1 <= code.size()) {
      l.disp = static_cast<int8_t>(code[d]);
    } else if (mod == 2 && d + 4 <= code.size()) {
      l.disp = Disp32(code, d);
    } else if (mod != 0) {
      continue;
    }
    if (!rex && i > 0 && IsRex(code[i - 1])) continue;  // the REX form was taken at i - 1
    out.push_back(l);
  }
  return out;
}

std::optional<uint32_t> ProbeCurrentExecuteData(std::span<const uint8_t> code, uint64_t addr,
                                                uint64_t executor_globals) {
  bool have_globals = false;
  for (size_t i = 0; i + 8 <= code.size(); ++i) {
    // lea rel32(%rip), %reg: 48|4c 8d (00 reg 101)
    if ((code[i] == 0x48 || code[i] == 0x4c) && code[i + 1] == 0x8d && (code[i + 2] & 0xc7) == 0x05 &&
        addr + i + 7 + static_cast<int64_t>(Disp32(code, i + 3)) == executor_globals) {
      have_globals = true;
    }
    if (code[i] != 0x48 || code[i + 1] != 0x83) continue;
    const uint8_t modrm = code[i + 2];
    if (modrm == 0x3d && code[i + 7] == 0) {  // cmpq $0, rel32(%rip)
      const uint64_t at = addr + i + 8 + static_cast<int64_t>(Disp32(code, i + 3));
      if (at >= executor_globals && at - executor_globals < 4096) return at - executor_globals;
    }
    if (have_globals && (modrm & 0xf8) == 0xb8 && modrm != 0xbc && code[i + 7] == 0) {  // cmpq $0, d32(%r)
      const int32_t d = Disp32(code, i + 3);
      if (d > 0 && d < 4096) return static_cast<uint32_t>(d);
    }
  }
  return std::nullopt;
}

std::optional<FilenameLoads> ProbeFilenameLoop(std::span<const uint8_t> code, uint32_t current_execute_data) {
  const std::vector<X86Load> loads = FindLoads(code);
  for (size_t i = 0; i < loads.size(); ++i) {
    if (!loads[i].wide || loads[i].disp != static_cast<int32_t>(current_execute_data)) continue;
    const int ex = loads[i].dst;
    std::optional<X86Load> func, prev;
    for (size_t j = i + 1; j < loads.size(); ++j) {
      const X86Load& l = loads[j];
      if (!l.wide) continue;
      if (!func && l.base == ex && l.dst != ex) {
        func = l;
      } else if (func && !prev && l.base == ex && l.dst == ex) {
        prev = l;
      } else if (func && prev && l.base == func->dst && l.disp > 0) {
        return FilenameLoads{static_cast<uint32_t>(func->disp), static_cast<uint32_t>(prev->disp),
                             static_cast<uint32_t>(l.disp)};
      }
    }
  }
  return std::nullopt;
}

std::optional<uint32_t> ProbeLineno(std::span<const uint8_t> code, uint32_t func) {
  const std::vector<X86Load> loads = FindLoads(code);
  for (size_t i = 0; i < loads.size(); ++i) {
    if (!loads[i].wide || loads[i].disp != static_cast<int32_t>(func)) continue;
    const int ex = loads[i].base;
    for (size_t j = i + 1; j < loads.size(); ++j) {
      if (!loads[j].wide || loads[j].base != ex || loads[j].disp != 0) continue;
      const int opline = loads[j].dst;
      for (size_t k = j + 1; k < loads.size(); ++k) {
        if (!loads[k].wide && loads[k].base == opline && loads[k].disp > 0) return loads[k].disp;
      }
      return std::nullopt;
    }
  }
  return std::nullopt;
}

std::optional<uint32_t> ProbeOpcodes(std::span<const uint8_t> code, uint32_t func, uint32_t lineno) {
  const std::vector<X86Load> loads = FindLoads(code);
  for (size_t i = 0; i < loads.size(); ++i) {
    if (!loads[i].wide || loads[i].disp != static_cast<int32_t>(func)) continue;
    const int fn = loads[i].dst;
    for (size_t j = i + 1; j < loads.size(); ++j) {
      if (!loads[j].wide || loads[j].base != fn || loads[j].disp <= 0) continue;
      // The line load right after it (within one disp32 load's length).
      for (size_t k = j + 1; k < loads.size() && loads[k].at <= loads[j].at + 7; ++k) {
        if (!loads[k].wide && loads[k].base == loads[j].dst && loads[k].disp == static_cast<int32_t>(lineno)) {
          return loads[j].disp;
        }
      }
    }
  }
  return std::nullopt;
}

std::optional<uint32_t> ProbeStringVal(std::span<const uint8_t> code) {
  for (size_t i = 0; i + 4 <= code.size(); ++i) {
    // lea disp8(%r), %rax: 48 8d (01 000 rrr) d8
    if (code[i] == 0x48 && code[i + 1] == 0x8d && (code[i + 2] & 0xf8) == 0x40 && code[i + 2] != 0x44 &&
        code[i + 3] > 0 && code[i + 3] < 0x40 && code[i + 3] % 8 == 0) {
      return code[i + 3];
    }
  }
  return std::nullopt;
}

namespace {

std::optional<size_t> Find(std::span<const uint8_t> code, std::span<const uint8_t> pattern) {
  for (size_t i = 0; i + pattern.size() <= code.size(); ++i) {
    if (std::memcmp(code.data() + i, pattern.data(), pattern.size()) == 0) return i;
  }
  return std::nullopt;
}

}  // namespace

bool ProbeVmRegisters(std::span<const uint8_t> code) {
  static constexpr uint8_t kExFromRdi[] = {0x49, 0x89, 0xfe};      // mov %rdi, %r14
  static constexpr uint8_t kOplineFromRdi[] = {0x4c, 0x8b, 0x3f};  // mov (%rdi), %r15
  return Find(code, kExFromRdi) && Find(code, kOplineFromRdi);
}

std::optional<size_t> ProbeDispatchJump(std::span<const uint8_t> code) {
  static constexpr uint8_t kJmpOpline[] = {0x41, 0xff, 0x27};  // jmp *(%r15)
  return Find(code, kJmpOpline);
}

}  // namespace ehprof
