#include "unwind_tables/a64_plt.h"

#include <elf.h>

#include <cstring>

#include "base/status_macros.h"

namespace ehprof {
namespace {

constexpr uint32_t kStpX16X30PreIndex = 0xa9bf7bf0;  // stp x16, x30, [sp, #-16]!
constexpr uint64_t kPlt0Bytes = 32;                   // with or without `bti c`

// The return address still in x30.
UnwindRule LeafRule(int32_t cfa_offset) { return RegisterCfaRule(EHP_A64_REG_SP, cfa_offset, EHP_RULE_SAME); }

}  // namespace

absl::StatusOr<std::vector<UnwindRow>> Aarch64PltRows(const ElfFile& elf) {
  std::vector<UnwindRow> rows;
  if (elf.arch() != Arch::kAarch64) return rows;
  EHP_ASSIGN_OR_RETURN(auto plt, elf.Section(".plt"));
  if (!plt || plt->type != SHT_PROGBITS || plt->addr == 0 || plt->size == 0) return rows;
  const uint64_t begin = plt->addr, end = plt->addr + plt->size;
  // PLT0's store is its first instruction, or its second after `bti c`.
  uint64_t pushed_at = 0;
  for (uint64_t off = 0; off + 4 <= 8 && off + 4 <= plt->data.size(); off += 4) {
    uint32_t insn;
    std::memcpy(&insn, plt->data.data() + off, 4);
    if (insn == kStpX16X30PreIndex) pushed_at = begin + off + 4;
  }
  rows.push_back({begin, LeafRule(0)});
  if (pushed_at != 0 && begin + kPlt0Bytes <= end) {
    rows.push_back({pushed_at, LeafRule(16)});
    if (begin + kPlt0Bytes < end) rows.push_back({begin + kPlt0Bytes, LeafRule(0)});
  }
  rows.push_back({end, UnwindRule::None()});
  return rows;
}

}  // namespace ehprof
