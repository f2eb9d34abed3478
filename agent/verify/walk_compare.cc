#include "agent/verify/walk_compare.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/output/output_folded.h"
#include "elf/elf_file.h"

namespace ehprof {
namespace {

std::vector<const ResolvedFrame*> UserFrames(const ResolvedSample& s) {
  std::vector<const ResolvedFrame*> out;
  for (const ResolvedFrame& f : s.frames) {
    if (!f.kernel && !f.inlined) out.push_back(&f);
  }
  return out;
}

bool SameFrame(const ResolvedFrame& a, const ResolvedFrame& b) {
  return a.addr == b.addr && a.dso == b.dso;
}

// x86-64: `call rel32` (E8) or `call r/m64` (FF /2 with any addressing
// form) ending right before `ra`.
bool EndsWithCall(const uint8_t* b /* the 7 bytes before ra */) {
  if (b[2] == 0xE8) return true;
  for (int n = 2; n <= 7; ++n) {
    const uint8_t op = b[7 - n], modrm = b[7 - n + 1];
    if (op != 0xFF || ((modrm >> 3) & 7) != 2) continue;
    const int mod = modrm >> 6, rm = modrm & 7;
    int size = 2 + ((rm == 4 && mod != 3) ? 1 : 0);
    if (mod == 1) size += 1;
    else if (mod == 2 || (mod == 0 && rm == 5)) size += 4;
    if (mod == 0 && rm == 4 && n >= 3 && (b[7 - n + 2] & 7) == 5) size += 4;
    if (size == n) return true;
  }
  return false;
}

}  // namespace

CallSiteChecker::CallSiteChecker() = default;
CallSiteChecker::~CallSiteChecker() = default;

bool CallSiteChecker::IsCallSite(const std::string& dso, uint64_t elf_vaddr) {
  auto it = files_.find(dso);
  if (it == files_.end()) {
    std::unique_ptr<ElfFile> elf;
    if (!dso.empty() && dso[0] == '/') {
      if (auto opened = ElfFile::Open(dso); opened.ok()) {
        elf = std::make_unique<ElfFile>(std::move(*opened));
      }
    }
    it = files_.emplace(dso, std::move(elf)).first;
  }
  if (!it->second || elf_vaddr + 1 < 7) return false;
  auto bytes = it->second->BytesAtVaddr(elf_vaddr + 1 - 7, 7);
  return bytes && EndsWithCall(bytes->data());
}

WalkComparison CompareWalks(const std::vector<ResolvedSample>& cfi,
                            const std::vector<ResolvedSample>& fp, CallSiteChecker& checker) {
  WalkComparison c;
  const size_t n = std::min(cfi.size(), fp.size());
  for (size_t i = 0; i < n; ++i) {
    auto a = UserFrames(cfi[i]), b = UserFrames(fp[i]);
    if (a.empty()) continue;
    ++c.samples;
    c.cfi_frames += a.size();
    c.fp_frames += b.size();
    for (size_t k = 1; k < b.size(); ++k) {
      ++c.fp_checked;
      if (!checker.IsCallSite(b[k]->dso, b[k]->addr)) ++c.fp_not_call_sites;
    }
    size_t k = 0;
    while (k < a.size() && k < b.size() && SameFrame(*a[k], *b[k])) ++k;
    if (k == a.size() && k == b.size()) {
      ++c.agree;
      continue;
    }
    const bool shorter = k == b.size();
    (shorter ? c.fp_shorter : c.fp_wrong)++;
    // The frame the FP walk missed: the CFI frame where the walks part.
    const ResolvedFrame& at = *a[std::min(k, a.size() - 1)];
    for (auto* m : {&c.per_binary[at.dso], &c.per_function[absl::StrCat(at.symbol, " (", at.dso, ")")]}) {
      ++m->samples;
      (shorter ? m->shorter : m->wrong)++;
    }
  }
  return c;
}

void WriteComparisonReport(const WalkComparison& c, std::ostream& out) {
  auto pct = [](uint64_t a, uint64_t b) { return b ? 100.0 * a / b : 0.0; };
  out << absl::StrFormat(
      "ehprof compare: frame pointers against CFI, %d samples with a user stack\n"
      "  FP agrees with CFI:      %8d  %6.2f%%\n"
      "  FP shorter (a prefix):   %8d  %6.2f%%\n"
      "  FP wrong (diverges):     %8d  %6.2f%%\n"
      "  mean user depth: CFI %.2f, FP %.2f\n"
      "  FP frames (above the leaf) that are not call sites: %d of %d (%.2f%%)\n",
      c.samples, c.agree, pct(c.agree, c.samples), c.fp_shorter, pct(c.fp_shorter, c.samples),
      c.fp_wrong, pct(c.fp_wrong, c.samples), c.samples ? double(c.cfi_frames) / c.samples : 0.0,
      c.samples ? double(c.fp_frames) / c.samples : 0.0, c.fp_not_call_sites, c.fp_checked,
      pct(c.fp_not_call_sites, c.fp_checked));
  auto table = [&](const char* title, const std::map<std::string, WalkComparison::Count>& m) {
    std::vector<std::pair<std::string, WalkComparison::Count>> rows(m.begin(), m.end());
    std::sort(rows.begin(), rows.end(),
              [](const auto& x, const auto& y) { return x.second.samples > y.second.samples; });
    out << "\n" << title << "\n  samples  shorter    wrong  where\n";
    for (size_t i = 0; i < rows.size() && i < 20; ++i) {
      out << absl::StrFormat("  %7d  %7d  %7d  %s\n", rows[i].second.samples,
                             rows[i].second.shorter, rows[i].second.wrong, rows[i].first);
    }
  };
  table("per binary, where FP first stops or diverges:", c.per_binary);
  table("per function, the first CFI frame FP misses (top 20):", c.per_function);
  out.flush();
}

absl::Status WriteDiffFolded(const std::vector<ResolvedSample>& cfi,
                             const std::vector<ResolvedSample>& fp, std::ostream& out) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> stacks;
  // Annotated as it always was: "_[k]" shows where each walk's kernel part
  // ends, which matters when comparing user walks.
  FoldedOptions annotated;
  annotated.annotate = true;
  auto add = [&](const std::vector<ResolvedSample>& samples, bool is_fp) {
    for (const ResolvedSample& s : samples) {
      auto& counts = stacks[FoldedStack(s, annotated)];
      (is_fp ? counts.first : counts.second) += s.count;
    }
  };
  add(fp, true);
  add(cfi, false);
  for (const auto& [stack, counts] : stacks) out << stack << ' ' << counts.first << ' ' << counts.second << '\n';
  out.flush();
  if (!out) return absl::DataLossError("differential folded output: write failed");
  return absl::OkStatus();
}

}  // namespace ehprof
