#include "agent/output/wall_view.h"

#include "absl/strings/str_cat.h"

namespace ehprof {

void ToWallView(ResolvedSample* sample, uint64_t period_ns, bool per_thread) {
  ResolvedSample& s = *sample;
  if (s.off_cpu) {
    ResolvedFrame marker;
    marker.symbol = kOffCpuFrame;
    marker.dso = kOffCpuFrame;
    s.frames.insert(s.frames.begin(), std::move(marker));
  } else {
    s.weight_ns = s.count * period_ns;
  }
  if (per_thread) s.comm = absl::StrCat(s.comm, "-", s.pid, "/", s.tid);
}

}  // namespace ehprof
