#include "unwind_tables/entry_point_rows.h"

#include <elf.h>

#include <algorithm>

namespace ehprof {
namespace {

// Whether addr lies in an executable segment the file loads.
bool InLoadedCode(const ElfFile& elf, uint64_t addr) {
  return std::any_of(elf.segments().begin(), elf.segments().end(), [&](const ElfSegment& s) {
    return s.type == PT_LOAD && (s.flags & PF_X) && addr >= s.vaddr && addr - s.vaddr < s.memsz;
  });
}

}  // namespace

std::vector<UnwindRow> EntryPointRows(const ElfFile& elf, const std::vector<UnwindRow>& rows) {
  std::vector<UnwindRow> out;
  const uint64_t entry = elf.entry();
  if (entry == 0 || rows.empty() || entry > UINT64_MAX - kEntryPointBytes) return out;
  // Only an entry point in code the file loads: a hostile e_entry must not
  // mark anything else.
  if (!InLoadedCode(elf, entry)) return out;
  auto next = std::upper_bound(rows.begin(), rows.end(), entry,
                               [](uint64_t a, const UnwindRow& r) { return a < r.addr; });
  if (next != rows.begin() && !std::prev(next)->rule.is_none()) return out;  // CFI covers it
  const uint64_t end = next == rows.end() ? entry + kEntryPointBytes
                                          : std::min(next->addr, entry + kEntryPointBytes);
  // A sample taken as execve returns has the new program's entry as its
  // user pc while the task is still in the syscall, so the walk looks it
  // up at pc - 1 like the address after a `syscall`: the byte before the
  // entry says "bottom" too, where no CFI covers it (padding; a function
  // ending there in a call has its FDE).
  uint64_t start = entry;
  auto before = std::upper_bound(rows.begin(), rows.end(), entry - 1,
                                 [](uint64_t a, const UnwindRow& r) { return a < r.addr; });
  if (InLoadedCode(elf, entry - 1) && (before == rows.begin() || std::prev(before)->rule.is_none())) start = entry - 1;
  UnwindRule bottom;
  bottom.cfa_kind = EHP_CFA_REG;
  // The kernel's stack pointer at entry: nothing was pushed (x86_64's
  // call pushed the return address the CFA is past).
  if (elf.arch() == Arch::kAarch64) {
    bottom.cfa_reg = EHP_A64_REG_SP;
    bottom.cfa_offset = 0;
  } else {
    bottom.cfa_reg = EHP_REG_RSP;
    bottom.cfa_offset = 8;
  }
  bottom.rbp_kind = EHP_RULE_SAME;
  bottom.ra_kind = EHP_RULE_UNDEFINED;
  out.push_back({start, bottom});
  out.push_back({end, UnwindRule::None()});
  return out;
}

}  // namespace ehprof
