// libFuzzer target: raw .eh_frame / .debug_frame bytes through the CFI parser
// and interpreter, then the rows through the compact encoding.
//
// Input: one control byte (bit 0 set: .debug_frame, else .eh_frame), then
// the section's bytes. Seeds: testdata/seeds/cfi (see docs/RELIABILITY.md).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "unwind_tables/cfa_program.h"
#include "unwind_tables/cfi_records.h"
#include "unwind_tables/unwind_row.h"

namespace ehprof::fuzz {

// In round_trip.cc.
void CheckCompactRoundTrip(const std::vector<UnwindRow>& rows);

namespace {

constexpr char kFile[] = "fuzz.cfi";

// Every FDE re-runs its CIE's initial instructions, so many FDEs sharing one
// long CIE cost quadratic time; this bound on interpreted bytes keeps one
// input well under 100 ms whatever -max_len is.
constexpr size_t kMaxInterpretedBytes = size_t{1} << 20;

// Errors must say where they are, or a user cannot find the bad file.
void CheckMessage(const absl::Status& st, CfiSectionKind kind) {
  const std::string msg(st.message());  // absl::string_view is not std's
  if (msg.find(kFile) == std::string::npos ||
      msg.find(CfiSectionName(kind)) == std::string::npos) {
    __builtin_trap();
  }
}

// RunCfaProgram's contract (cfa_program.h) for the rows it appended.
void CheckFdeRows(const Fde& fde, const std::vector<UnwindRow>& rows, size_t first,
                  uint64_t counted) {
  const size_t n = rows.size() - first;
  if (fde.pc_end <= fde.pc_begin) {
    if (n != 0) __builtin_trap();
    return;
  }
  if (n == 0 || rows[first].addr != fde.pc_begin || counted < n) __builtin_trap();
  for (size_t i = first; i < rows.size(); ++i) {
    if (rows[i].addr >= fde.pc_end || rows[i].rule.is_none()) __builtin_trap();
    if (i > first && (rows[i].addr <= rows[i - 1].addr ||
                      rows[i].rule == rows[i - 1].rule)) {
      __builtin_trap();
    }
  }
}

// Any sorted rows ending with a none row are valid encoder input: FDE rows
// by address (the first at an address wins, as overlapping FDEs would), a
// none row where an FDE ends and nothing else starts, equal neighbours merged.
std::vector<UnwindRow> ValidRows(std::vector<UnwindRow> rows,
                                 const std::vector<uint64_t>& fde_ends) {
  for (uint64_t end : fde_ends) rows.push_back({end, UnwindRule::None()});
  std::stable_sort(rows.begin(), rows.end(), [](const UnwindRow& a, const UnwindRow& b) {
    return a.addr < b.addr;
  });
  std::vector<UnwindRow> out;
  out.reserve(rows.size());
  for (const UnwindRow& r : rows) {
    if (!out.empty() && (out.back().addr == r.addr || out.back().rule == r.rule)) continue;
    out.push_back(r);
  }
  // Every FDE row lies below its FDE's end, so the last row is a none row.
  if (!out.empty() && !out.back().rule.is_none()) __builtin_trap();
  return out;
}

}  // namespace
}  // namespace ehprof::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace ehprof;
  using namespace ehprof::fuzz;
  if (size < 1) return 0;
  CfiSectionRef ref;
  ref.kind = (data[0] & 1) ? CfiSectionKind::kDebugFrame : CfiSectionKind::kEhFrame;
  ref.data = std::span<const uint8_t>(data + 1, size - 1);
  ref.vaddr = 0x1000;
  ref.file = kFile;
  auto records = ParseCfiRecords(ref);
  if (!records.ok()) {
    CheckMessage(records.status(), ref.kind);
    return 0;
  }
  std::vector<UnwindRow> rows;
  std::vector<uint64_t> fde_ends;
  uint64_t cfi_rows = 0;
  size_t budget = kMaxInterpretedBytes;
  for (const Fde& fde : records->fdes) {
    if (fde.cie >= records->cies.size()) __builtin_trap();
    const size_t cost = records->cies[fde.cie].initial_instructions.size() +
                        fde.instructions.size() + 1;
    if (cost > budget) break;
    budget -= cost;
    const size_t first = rows.size();
    const uint64_t counted_before = cfi_rows;
    absl::Status st = RunCfaProgram(*records, fde, &rows, &cfi_rows);
    if (!st.ok()) {
      // On error nothing is appended or counted.
      if (rows.size() != first || cfi_rows != counted_before) __builtin_trap();
      CheckMessage(st, ref.kind);
      continue;
    }
    CheckFdeRows(fde, rows, first, cfi_rows - counted_before);
    if (rows.size() > first) fde_ends.push_back(fde.pc_end);
  }
  CheckCompactRoundTrip(ValidRows(std::move(rows), fde_ends));
  return 0;
}
