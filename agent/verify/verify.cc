#include "agent/verify/verify.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_format.h"
#include "agent/verify/dwfl_unwinder.h"

namespace ehprof {
namespace {

std::vector<DwflMapping> ToDwfl(const std::vector<TrackedMapping>& mappings) {
  std::vector<DwflMapping> out;
  for (const TrackedMapping& m : mappings) {
    if (m.path.empty() || m.path[0] != '/') continue;  // vDSO, anonymous code
    out.push_back({m.start, m.end, m.bias, m.path});
  }
  return out;
}

}  // namespace

VerifyResult VerifyWalks(const std::vector<RawSample>& samples,
                         const std::vector<VerifyCapture>& captures, const ProcessTracker& tracker) {
  VerifyResult r;
  // One unwinder per mapping snapshot: the files are opened once.
  std::map<const std::vector<TrackedMapping>*, std::unique_ptr<DwflUnwinder>> unwinders;
  for (const VerifyCapture& c : captures) {
    if (c.sample >= samples.size()) continue;
    const RawSample& s = samples[c.sample];
    ++r.captures;
    const std::vector<TrackedMapping>* mappings = tracker.MappingsAt(s.pid, s.time_ns);
    if (!mappings) continue;
    auto& u = unwinders[mappings];
    if (!u) u = std::make_unique<DwflUnwinder>(ToDwfl(*mappings));
    StackCapture sc;
    std::copy(std::begin(c.regs), std::end(c.regs), sc.regs);
    sc.stack = c.stack;
    sc.exact = c.exact;
    auto theirs = u->Unwind(sc, EHP_MAX_USER_FRAMES);
    if (!theirs.ok() || theirs->empty()) continue;
    ++r.checked;
    std::vector<uint64_t> ours;
    // The walk's Python, JavaScript, Ruby and PHP frames (bpf/python.bpf.h, bpf/v8.bpf.h, ...) sit between the native
    // ones they were read from; libdwfl knows only the native frames, so
    // the two are compared on those.
    for (uint64_t v : s.user) {
      if (EHP_IS_PY_FRAME(v) || EHP_IS_V8_FRAME(v) || EHP_IS_INTERP_FRAME(v)) continue;
      ours.push_back(v & EHP_FRAME_ADDR_MASK);
    }
    const size_t n = std::min(ours.size(), theirs->size());
    size_t same = 0;
    size_t first_diff = n;
    for (size_t i = 0; i < n; ++i) {
      if (ours[i] == (*theirs)[i]) {
        ++same;
      } else if (first_diff == n) {
        first_diff = i;
      }
    }
    r.frames_agree += same;
    r.frames_total += std::max(ours.size(), theirs->size());
    if (first_diff == n && ours.size() == theirs->size()) {
      ++r.samples_agree;
      continue;
    }
    if (first_diff == n) {
      (ours.size() > theirs->size() ? r.ours_longer : r.libdw_longer)++;
    } else {
      ++r.diverged;
    }
    const size_t at = std::min(first_diff, ours.size() - 1);
    auto where = tracker.Resolve(s.pid, s.time_ns, ours[at]);
    ++r.divergence_by_file[where ? where->mapping->path : "[unknown]"];
  }
  return r;
}

void WriteVerifyReport(const VerifyResult& r, std::ostream& out) {
  auto pct = [](uint64_t a, uint64_t b) { return b ? 100.0 * a / b : 0.0; };
  out << absl::StrFormat(
      "ehprof verify: %d samples captured, %d unwound by libdwfl\n"
      "  frames agreeing with libdwfl: %d of %d (%.2f%%)\n"
      "  samples agreeing on every frame: %d (%.2f%%)\n"
      "  ehprof longer: %d, libdwfl longer: %d, diverged: %d\n",
      r.captures, r.checked, r.frames_agree, r.frames_total, pct(r.frames_agree, r.frames_total),
      r.samples_agree, pct(r.samples_agree, r.checked), r.ours_longer, r.libdw_longer, r.diverged);
  for (const auto& [file, n] : r.divergence_by_file) {
    out << absl::StrFormat("  first difference in %s: %d\n", file, n);
  }
  out.flush();
}

}  // namespace ehprof
