#include "unwind_tables/crt_rows.h"

#include <elf.h>

#include <algorithm>
#include <map>
#include <optional>
#include <span>
#include <utility>

namespace ehprof {
namespace {

using Bytes = std::span<const uint8_t>;

// Where the return address is, before an instruction runs.
enum class Frame : uint8_t {
  kEntry,   // at rsp (cfa = rsp + 8)
  kPushed,  // `push %rbp` ran: cfa = rsp + 16, rbp saved at cfa - 16
  kFramed,  // `mov %rsp,%rbp` too: cfa = rbp + 16
};

enum class Kind : uint8_t { kNop, kPlain, kPushRbp, kMovRspRbp, kPopRbp, kLeave, kRet, kJmpIndirect, kJmp, kJcc };

struct Insn {
  size_t len = 0;
  Kind kind = Kind::kPlain;
  int64_t rel = 0;  // kJmp, kJcc: the target's distance from the next instruction
};

constexpr uint8_t kRsp = 4, kRbp = 5;

int64_t Rel8(Bytes b, size_t at) { return static_cast<int8_t>(b[at]); }
int64_t Rel32(Bytes b, size_t at) {
  return static_cast<int32_t>(static_cast<uint32_t>(b[at]) | static_cast<uint32_t>(b[at + 1]) << 8 |
                              static_cast<uint32_t>(b[at + 2]) << 16 | static_cast<uint32_t>(b[at + 3]) << 24);
}

// A multi-byte nop (0x66 prefixes, one 0x2e, `0f 1f /0` with any memory
// operand): its length, 0 if b is not one.
size_t LongNop(Bytes b) {
  size_t i = 0;
  while (i < 8 && i < b.size() && b[i] == 0x66) ++i;
  if (i < b.size() && b[i] == 0x2e) ++i;
  if (i + 3 > b.size() || b[i] != 0x0f || b[i + 1] != 0x1f) return 0;
  const uint8_t modrm = b[i + 2], mod = modrm >> 6, rm = modrm & 7;
  if (((modrm >> 3) & 7) != 0 || mod == 3) return 0;
  size_t len = i + 3 + (rm == 4 ? 1 : 0);
  if (mod == 1) len += 1;
  if (mod == 2 || (mod == 0 && rm == 5)) len += 4;
  return len <= b.size() ? len : 0;
}

// The REX.W instructions crtstuff's functions are made of; nullopt for any
// other, and for one writing rsp or rbp but `mov %rsp,%rbp`.
std::optional<Insn> DecodeRexW(Bytes b) {
  if (b.size() < 3) return std::nullopt;
  const uint8_t op = b[1], modrm = b[2], mod = modrm >> 6, reg = (modrm >> 3) & 7, rm = modrm & 7;
  const bool rip = mod == 0 && rm == 5, frame_rm = rm == kRsp || rm == kRbp;
  if (op == 0x89 && modrm == 0xe5) return Insn{3, Kind::kMovRspRbp};
  switch (op) {
    case 0x39: case 0x85:  // cmp, test: no write
      return mod == 3 ? std::optional<Insn>(Insn{3}) : std::nullopt;
    case 0x89: case 0x01: case 0x29: case 0x31: case 0x21: case 0x09:  // writes r/m
    case 0xd1:                                                         // shifts by 1
      return mod == 3 && !frame_rm ? std::optional<Insn>(Insn{3}) : std::nullopt;
    case 0xc1:  // shifts by imm8
      return mod == 3 && !frame_rm && b.size() >= 4 ? std::optional<Insn>(Insn{4}) : std::nullopt;
    case 0x8b: case 0x8d:  // mov, lea into reg: from a register or disp32(%rip)
      if (reg == kRsp || reg == kRbp) return std::nullopt;
      if (op == 0x8b && mod == 3) return Insn{3};
      return rip && b.size() >= 7 ? std::optional<Insn>(Insn{7}) : std::nullopt;
    case 0x83:  // cmpq $imm8, disp32(%rip) or reg; other group-1 ops on a register
      if (rip && reg == 7 && b.size() >= 8) return Insn{8};
      if (mod == 0 && rm != kRsp && rm != kRbp && reg == 7 && b.size() >= 4) return Insn{4};  // cmpq $imm8, (reg)
      return mod == 3 && (reg == 7 || !frame_rm) && b.size() >= 4 ? std::optional<Insn>(Insn{4}) : std::nullopt;
    case 0x3d:  // cmp $imm32, %rax
      return b.size() >= 6 ? std::optional<Insn>(Insn{6}) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<Insn> Decode(Bytes b) {
  if (b.empty()) return std::nullopt;
  if (b.size() >= 4 && b[0] == 0xf3 && b[1] == 0x0f && b[2] == 0x1e && b[3] == 0xfa) return Insn{4, Kind::kNop};
  if (size_t n = LongNop(b)) return Insn{n, Kind::kNop};
  if (b.size() >= 2 && b[0] == 0x66 && b[1] == 0x90) return Insn{2, Kind::kNop};  // xchg %ax,%ax
  if (b.size() >= 2 && b[0] == 0xf3 && b[1] == 0xc3) return Insn{2, Kind::kRet};  // repz ret (older GCCs)
  const uint8_t op = b[0];
  const auto need = [&](size_t n, Kind k, int64_t rel = 0) {
    return b.size() >= n ? std::optional<Insn>(Insn{n, k, rel}) : std::nullopt;
  };
  switch (op) {
    case 0x90: case 0xcc: return Insn{1, Kind::kNop};
    case 0x55: return Insn{1, Kind::kPushRbp};
    case 0x5d: return Insn{1, Kind::kPopRbp};
    case 0xc9: return Insn{1, Kind::kLeave};
    case 0xc3: return Insn{1, Kind::kRet};
    case 0x48: return DecodeRexW(b);
    case 0x74: case 0x75: return need(2, Kind::kJcc, b.size() >= 2 ? Rel8(b, 1) : 0);
    case 0xeb: return need(2, Kind::kJmp, b.size() >= 2 ? Rel8(b, 1) : 0);
    case 0xe9: return need(5, Kind::kJmp, b.size() >= 5 ? Rel32(b, 1) : 0);
    case 0xe8: return need(5, Kind::kPlain);  // call rel32: rsp as it was after
    case 0x80: case 0xc6:  // cmpb / movb $imm8, disp32(%rip)
      return b.size() >= 7 && b[1] == (op == 0x80 ? 0x3d : 0x05) ? std::optional<Insn>(Insn{7}) : std::nullopt;
    case 0x0f:
      if (b.size() >= 6 && (b[1] == 0x84 || b[1] == 0x85)) return Insn{6, Kind::kJcc, Rel32(b, 2)};
      return std::nullopt;
    case 0xff: {
      if (b.size() < 2) return std::nullopt;
      const uint8_t modrm = b[1];
      if (modrm >= 0xd0 && modrm <= 0xd7) return Insn{2};                // call *reg
      if (modrm == 0x15) return need(6, Kind::kPlain);                      // call *disp32(%rip)
      if (modrm >= 0xe0 && modrm <= 0xe7) return Insn{2, Kind::kJmpIndirect};  // jmp *reg
      if (modrm == 0x25) return need(6, Kind::kJmpIndirect);
      return std::nullopt;
    }
    case 0x31: case 0x85:  // 32-bit xor / test of registers
      return b.size() >= 2 && (b[1] >> 6) == 3 && (op == 0x85 || ((b[1] & 7) != kRsp && (b[1] & 7) != kRbp))
                 ? std::optional<Insn>(Insn{2})
                 : std::nullopt;
  }
  if (op >= 0xb8 && op <= 0xbf && op != 0xb8 + kRsp && op != 0xb8 + kRbp) return need(5, Kind::kPlain);
  return std::nullopt;
}

// The frame after an instruction of kind k runs in *f (known); false when
// k cannot run there. *leaves: it left as a called function does.
bool Apply(Kind k, std::optional<Frame>* f, std::vector<bool>::reference leaves) {
  switch (k) {
    case Kind::kNop: case Kind::kPlain: case Kind::kJcc: return true;
    case Kind::kPushRbp:
      if (**f != Frame::kEntry) return false;
      *f = Frame::kPushed;
      return true;
    case Kind::kMovRspRbp:
      if (**f != Frame::kPushed) return false;
      *f = Frame::kFramed;
      return true;
    case Kind::kPopRbp:
      if (**f == Frame::kEntry) return false;
      *f = Frame::kEntry;
      return true;
    case Kind::kLeave:
      if (**f != Frame::kFramed) return false;
      *f = Frame::kEntry;
      return true;
    case Kind::kRet: case Kind::kJmpIndirect:
      if (**f != Frame::kEntry) return false;
      leaves = true;
      *f = std::nullopt;
      return true;
    case Kind::kJmp:
      *f = std::nullopt;
      return true;
  }
  return false;
}

// Whether every function (from its start) leaves as a called function
// does, a jump to another function's start (a tail call) counted too.
bool EveryFunctionLeaves(const std::vector<uint64_t>& starts, std::vector<bool> leaves,
                         const std::vector<std::pair<size_t, uint64_t>>& inner_jumps) {
  for (const auto& [function, target] : inner_jumps) {
    auto it = std::find(starts.begin(), starts.end(), target);
    if (it != starts.end() && static_cast<size_t>(it - starts.begin()) != function) leaves[function] = true;
  }
  return std::find(leaves.begin(), leaves.end(), false) == leaves.end();
}

// The frame before each instruction of code (at lo), or nullopt when the
// code is not that shape: an unknown instruction, a frame operation out of
// order, a jump landing between instructions or where the frame differs,
// the gap ending inside a frame, or nothing but padding. Code after a
// return or jump has the frame of the jumps that land on it, else it is a
// function's start.
std::optional<std::vector<std::pair<uint64_t, Frame>>> Trace(Bytes code, uint64_t lo) {
  const uint64_t hi = lo + code.size();
  std::vector<std::pair<uint64_t, Frame>> steps;
  std::map<uint64_t, Frame> ahead;                   // jumps' targets not reached yet
  std::vector<std::pair<uint64_t, Frame>> behind;    // jumps back, checked at the end
  std::optional<Frame> f;                            // nullopt: at the start, after a return or jump
  // Each function's start and whether it leaves as a called function does
  // (ret, an indirect or outside jump, a jump to another function): code
  // that only loops or runs off the gap was not entered by a call (a
  // hand-made frame's loop), and its return address is not at rsp.
  std::vector<uint64_t> starts;
  std::vector<bool> leaves;
  std::vector<std::pair<size_t, uint64_t>> inner_jumps;  // (function, target) of jumps within the gap
  for (size_t at = 0; at < code.size();) {
    const uint64_t addr = lo + at;
    std::optional<Insn> in = Decode(code.subspan(at));
    if (!in || at + in->len > code.size()) return std::nullopt;
    if (auto it = ahead.find(addr); it != ahead.end()) {
      if (f && *f != it->second) return std::nullopt;
      f = it->second;
      ahead.erase(it);
    }
    // Padding after a return keeps the frame unknown: a jump may land past it.
    if (in->kind == Kind::kNop) {
      steps.push_back({addr, f.value_or(Frame::kEntry)});
      at += in->len;
      continue;
    }
    if (!f) {  // nothing jumps here: a function's start
      f = Frame::kEntry;
      starts.push_back(addr);
      leaves.push_back(false);
    }
    steps.push_back({addr, *f});
    const uint64_t next = addr + in->len;
    if (in->kind == Kind::kJmp || in->kind == Kind::kJcc) {
      const uint64_t target = next + in->rel;
      if (in->kind == Kind::kJmp) inner_jumps.push_back({starts.size() - 1, target});
      if (target < lo || target >= hi) {
        if (*f != Frame::kEntry) return std::nullopt;  // only a tail jump leaves the gap
        if (in->kind == Kind::kJmp) leaves.back() = true;
      } else if (target > addr) {
        if (!ahead.emplace(target, *f).second && ahead[target] != *f) return std::nullopt;
      } else {
        behind.push_back({target, *f});
      }
    }
    if (!Apply(in->kind, &f, leaves.back())) return std::nullopt;
    at += in->len;
  }
  // A target between instructions was never reached.
  // No function start: nothing but padding.
  if ((f && *f != Frame::kEntry) || !ahead.empty() || starts.empty()) return std::nullopt;
  if (!EveryFunctionLeaves(starts, leaves, inner_jumps)) return std::nullopt;
  for (const auto& [target, frame] : behind) {
    auto it = std::lower_bound(steps.begin(), steps.end(), std::make_pair(target, Frame::kEntry),
                               [](const auto& a, const auto& b) { return a.first < b.first; });
    if (it == steps.end() || it->first != target || it->second != frame) return std::nullopt;
  }
  return steps;
}

UnwindRule RuleOf(Frame f) {
  if (f == Frame::kEntry) return RegisterCfaRule(EHP_REG_RSP, 8, EHP_RULE_CFA_OFFSET, -8);
  UnwindRule r = f == Frame::kPushed ? RegisterCfaRule(EHP_REG_RSP, 16, EHP_RULE_CFA_OFFSET, -8)
                                     : RegisterCfaRule(EHP_REG_RBP, 16, EHP_RULE_CFA_OFFSET, -8);
  r.rbp_kind = EHP_RULE_CFA_OFFSET;
  r.rbp_offset = -16;
  return r;
}

// The CFI gaps [start, end) of rows inside .text, at most kCrtGapMax long.
std::vector<std::pair<uint64_t, uint64_t>> Gaps(const std::vector<UnwindRow>& rows, uint64_t text, uint64_t text_end) {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  const auto add = [&](uint64_t start, uint64_t end) {
    start = std::max(start, text);
    end = std::min(end, text_end);
    if (start < end && end - start <= kCrtGapMax) out.push_back({start, end});
  };
  if (text < rows.front().addr) add(text, rows.front().addr);
  for (size_t k = 0; k + 1 < rows.size(); ++k) {
    if (rows[k].rule.is_none()) add(rows[k].addr, rows[k + 1].addr);
  }
  return out;
}

// Where a gap's code starts: past zero bytes up to the next 16-byte
// boundary, a linker's fill after a function whose FDE ends at a call
// that does not return (libLLVM's crtbegin code follows one); start
// itself when the gap does not begin so.
uint64_t PastZeroFill(Bytes text, uint64_t text_addr, uint64_t start, uint64_t end) {
  uint64_t at = start;
  while (at < end && at % 16 != 0 && text[at - text_addr] == 0) ++at;
  return at % 16 == 0 && at < end ? at : start;
}

}  // namespace

std::vector<UnwindRow> CrtRows(const ElfFile& elf, const std::vector<UnwindRow>& rows) {
  std::vector<UnwindRow> out;
  if (elf.arch() != Arch::kX86_64 || rows.empty()) return out;
  auto text = elf.Section(".text");
  if (!text.ok() || !text->has_value()) return out;
  const ElfSection& s = **text;
  if (s.type != SHT_PROGBITS || s.addr == 0 || s.data.size() != s.size) return out;
  for (auto [start, end] : Gaps(rows, s.addr, s.addr + s.size)) {
    start = PastZeroFill(s.data, s.addr, start, end);
    auto steps = Trace(s.data.subspan(start - s.addr, end - start), start);
    if (!steps) continue;
    for (const auto& [addr, frame] : *steps) {
      const UnwindRule rule = RuleOf(frame);
      if (out.empty() || out.back().rule != rule) out.push_back({addr, rule});
    }
    out.push_back({end, UnwindRule::None()});
  }
  return out;
}

}  // namespace ehprof
