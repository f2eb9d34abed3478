#include "agent/perl/perl_probe.h"

#include <cstring>

namespace ehprof {

namespace {

int32_t Disp32(std::span<const uint8_t> b, size_t at) {
  int32_t v;
  std::memcpy(&v, b.data() + at, 4);
  return v;
}

constexpr int kRax = 0, kRdx = 2, kRsp = 4, kRdi = 7;

// The instruction at i, when it is one FindMemOps reads.
std::optional<X86MemOp> DecodeAt(std::span<const uint8_t> code, size_t i) {
  size_t p = i;
  uint8_t rex = 0;
  if ((code[p] & 0xf0) == 0x40) rex = code[p++];
  if (p + 2 > code.size()) return std::nullopt;
  X86MemOp op;
  op.opcode = code[p++];
  if (op.opcode != 0x8b && op.opcode != 0x63 && op.opcode != 0x89 && op.opcode != 0xc7 && op.opcode != 0x8d &&
      op.opcode != 0x83) {
    return std::nullopt;
  }
  const uint8_t modrm = code[p++];
  const int mod = modrm >> 6, rm = modrm & 7;
  if (mod == 3) return std::nullopt;
  op.wide = (rex & 8) != 0;
  op.reg = ((modrm >> 3) & 7) | ((rex & 4) ? 8 : 0);
  if (rm == 4) {
    if (p >= code.size()) return std::nullopt;
    const uint8_t sib = code[p++];
    if ((sib & 7) == 5 && mod == 0) return std::nullopt;  // no base
    op.base = (sib & 7) | ((rex & 1) ? 8 : 0);
    const int index = ((sib >> 3) & 7) | ((rex & 2) ? 8 : 0);
    op.index = index == kRsp ? -1 : index;
    op.scale = 1 << (sib >> 6);
  } else {
    if (mod == 0 && rm == 5) return std::nullopt;  // rip-relative
    op.base = rm | ((rex & 1) ? 8 : 0);
  }
  if (mod == 1) {
    if (p + 1 > code.size()) return std::nullopt;
    op.disp = static_cast<int8_t>(code[p++]);
  } else if (mod == 2) {
    if (p + 4 > code.size()) return std::nullopt;
    op.disp = Disp32(code, p);
    p += 4;
  }
  if (op.opcode == 0xc7) {
    if ((op.reg & 7) != 0 || p + 4 > code.size()) return std::nullopt;
    op.imm = Disp32(code, p);
    p += 4;
  } else if (op.opcode == 0x83) {
    if ((op.reg & 7) != 7 || p + 1 > code.size()) return std::nullopt;
    op.imm = static_cast<int8_t>(code[p++]);
  }
  op.at = i;
  op.len = p - i;
  return op;
}

bool IsLoad(const X86MemOp& o) { return o.opcode == 0x8b && o.wide && o.index < 0; }

// The instruction decoded at byte `at`, the one right after another.
const X86MemOp* At(const std::vector<X86MemOp>& ops, size_t at) {
  for (const X86MemOp& o : ops) {
    if (o.at == at) return &o;
  }
  return nullptr;
}

}  // namespace

std::vector<X86MemOp> FindMemOps(std::span<const uint8_t> code) {
  std::vector<X86MemOp> out;
  for (size_t i = 0; i + 3 <= code.size(); ++i) {
    if (auto op = DecodeAt(code, i)) out.push_back(*op);
  }
  return out;
}

std::optional<uint32_t> ProbeCurcop(std::span<const uint8_t> code) {
  const std::vector<X86MemOp> ops = FindMemOps(code);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!IsLoad(ops[i]) || ops[i].base != kRdi || ops[i].disp <= 0) continue;
    // cmpq $0, disp(%cop): the statement's warnings.
    for (size_t j = i + 1; j < ops.size() && ops[j].at < ops[i].at + 32; ++j) {
      if (ops[j].opcode == 0x83 && ops[j].wide && ops[j].imm == 0 && ops[j].base == ops[i].reg) {
        return static_cast<uint32_t>(ops[i].disp);
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<uint32_t> ProbeSiPrev(std::span<const uint8_t> code, uint32_t curstackinfo) {
  const std::vector<X86MemOp> ops = FindMemOps(code);
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!IsLoad(ops[i]) || ops[i].base != kRdi || ops[i].disp != static_cast<int32_t>(curstackinfo)) continue;
    const int si = ops[i].reg;
    for (size_t j = i + 1; j < ops.size(); ++j) {
      if (IsLoad(ops[j]) && ops[j].base == si && ops[j].reg == si && ops[j].disp > 0) {
        return static_cast<uint32_t>(ops[j].disp);
      }
    }
    return std::nullopt;
  }
  return std::nullopt;
}

namespace {

// The context size: `lea (%x,%x,a), %y` then `lea (%x,%y,b), %z` (x times
// 1 + b (1 + a)), then an address scaled by 8 from %z.
std::optional<uint32_t> ContextSize(const std::vector<X86MemOp>& ops) {
  for (size_t i = 0; i < ops.size(); ++i) {
    const X86MemOp& a = ops[i];
    const X86MemOp* b = At(ops, a.at + a.len);
    if (!b || a.opcode != 0x8d || b->opcode != 0x8d || a.index != a.base || a.disp || b->disp || b->base != a.base ||
        b->index != a.reg) {
      continue;
    }
    for (size_t j = i + 1; j < ops.size() && ops[j].at < b->at + 24; ++j) {
      if (ops[j].at > b->at && ops[j].index == b->reg && ops[j].scale == 8) return 8u * (1 + b->scale * (1 + a.scale));
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<LeavesubOffsets> ProbeLeavesub(std::span<const uint8_t> code, uint32_t curcop) {
  const std::vector<X86MemOp> ops = FindMemOps(code);
  LeavesubOffsets o;
  int si = -1, cx = -1;
  for (size_t i = 0; i < ops.size(); ++i) {
    const X86MemOp& op = ops[i];
    if (si < 0 && IsLoad(op) && op.base == kRdi && op.disp > 0) {
      si = op.reg;
      o.curstackinfo = static_cast<uint32_t>(op.disp);
    } else if (si >= 0 && !o.si_cxix && op.opcode == 0x63 && op.wide && op.base == si && op.index < 0) {
      o.si_cxix = static_cast<uint32_t>(op.disp);
    } else if (si >= 0 && !o.si_cxstack && IsLoad(op) && op.base == si && op.disp > 0) {
      o.si_cxstack = static_cast<uint32_t>(op.disp);
    } else if (const X86MemOp* next = At(ops, op.at + op.len);
               cx < 0 && IsLoad(op) && op.disp > 0 && next && next->opcode == 0x89 && next->wide &&
               next->reg == op.reg && next->index < 0 && next->disp == static_cast<int32_t>(curcop)) {
      cx = op.base;  // PL_curcop = cx->blk_oldcop
      o.cx_oldcop = static_cast<uint32_t>(op.disp);
    }
  }
  if (cx < 0) return std::nullopt;
  for (size_t i = 0; i < ops.size(); ++i) {
    const X86MemOp& op = ops[i];
    if (!IsLoad(op) || op.base != cx || op.disp <= 0) continue;
    for (size_t j = i + 1; !o.cx_cv && j < ops.size() && ops[j].at < op.at + 64; ++j) {
      if (ops[j].opcode == 0xc7 && ops[j].wide && ops[j].imm == 0 && ops[j].base == cx && ops[j].disp == op.disp) {
        o.cx_cv = static_cast<uint32_t>(op.disp);
      }
    }
    // mov disp(%cx), %rdx ... mov %rdx, %rax ... ret: the return op.
    if (op.reg == kRdx) {
      for (size_t k = op.at + op.len; k + 4 <= code.size() && k < op.at + 24; ++k) {
        if (code[k] == 0x48 && code[k + 1] == 0x89 && code[k + 2] == (0xc0 | (kRdx << 3) | kRax)) {
          o.cx_retop = static_cast<uint32_t>(op.disp);
        }
      }
    }
  }
  auto size = ContextSize(ops);
  if (!size || !o.curstackinfo || !o.si_cxix || !o.si_cxstack || !o.cx_cv || !o.cx_retop) return std::nullopt;
  o.cx_size = *size;
  return o;
}

}  // namespace ehprof
