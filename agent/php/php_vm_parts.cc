#include "agent/php/php_vm_parts.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <span>

#include "unwind_tables/cfi_records.h"
#include "unwind_tables/cfi_sections.h"
#include "unwind_tables/table_builder.h"

namespace ehprof {

namespace {

// DWARF call frame instructions that set the CFA.
constexpr uint8_t kDwCfaDefCfa = 0x0c;
constexpr uint8_t kDwCfaDefCfaOffset = 0x0e;
constexpr uint8_t kDwCfaDefCfaExpression = 0x0f;

// The target of a jcc rel32 (0f 80-8f) or jmp rel32 (e9) at code[i], if
// one starts there (code at vaddr).
std::optional<uint64_t> JumpTarget(std::span<const uint8_t> code, size_t i, uint64_t vaddr) {
  size_t rel_at = 0;
  if (code[i] == 0x0f && i + 6 <= code.size() && (code[i + 1] & 0xf0) == 0x80) rel_at = i + 2;
  else if (code[i] == 0xe9 && i + 5 <= code.size()) rel_at = i + 1;
  else return std::nullopt;
  int32_t rel;
  std::memcpy(&rel, code.data() + rel_at, 4);
  return vaddr + rel_at + 4 + static_cast<int64_t>(rel);
}

}  // namespace

std::vector<std::pair<uint64_t, uint64_t>> FindVmParts(std::span<const uint8_t> code, uint64_t vm_begin,
                                                       const CfiFunctions& cfi, size_t max_parts) {
  const uint64_t vm_end = vm_begin + code.size();
  std::map<std::pair<uint64_t, uint64_t>, size_t> jumps;  // FDE range -> jumps landing inside it
  for (size_t i = 0; i < code.size(); ++i) {
    auto target = JumpTarget(code, i, vm_begin);
    if (!target || (*target >= vm_begin && *target < vm_end)) continue;
    auto range = cfi.Find(*target);
    if (!range || (range->begin < vm_end && range->end > vm_begin)) continue;
    ++jumps[{range->begin, range->end}];
  }
  std::vector<std::pair<size_t, std::pair<uint64_t, uint64_t>>> parts;
  for (const auto& [range, n] : jumps) {
    if (n >= 2) parts.push_back({n, range});
  }
  std::sort(parts.begin(), parts.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::pair<uint64_t, uint64_t>> out;
  for (size_t i = 0; i < parts.size() && i < max_parts; ++i) out.push_back(parts[i].second);
  return out;
}

std::vector<std::pair<uint64_t, uint64_t>> FindVmPartsInFile(const ElfFile& elf, uint64_t vm_begin,
                                                             uint64_t vm_end, size_t max_parts) {
  if (vm_end <= vm_begin) return {};
  auto code = elf.BytesAtVaddr(vm_begin, vm_end - vm_begin);
  auto ref = LocateEhFrame(elf);
  if (!code || !ref.ok() || !*ref) return {};
  (*ref)->max_fdes = kMaxTableRows;
  auto recs = ParseCfiRecords(**ref);
  if (!recs.ok()) return {};
  // An FDE whose first instruction sets the CFA (no advance first) starts
  // inside a frame set up elsewhere: a part of another function. A
  // function's own FDE starts with the call's CFA (sp + 8) and pushes.
  std::vector<FunctionRange> mid_frame;
  for (const Fde& f : recs->fdes) {
    if (f.pc_end <= f.pc_begin || f.instructions.empty()) continue;
    const uint8_t op = f.instructions[0];
    if (op == kDwCfaDefCfa || op == kDwCfaDefCfaOffset || op == kDwCfaDefCfaExpression) {
      mid_frame.push_back({f.pc_begin, f.pc_end});
    }
  }
  return FindVmParts(*code, vm_begin, CfiFunctions::FromRanges(std::move(mid_frame)), max_parts);
}

}  // namespace ehprof
