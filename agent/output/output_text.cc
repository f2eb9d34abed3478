#include "agent/output/output_text.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace ehprof {
namespace {

void WriteFrame(const FrameView& f, std::ostream& out) {
  std::string line = absl::StrFormat("  0x%x: %s", f.addr, f.symbol.empty() ? "[unknown]" : f.symbol);
  if (f.symbol_start != 0 && f.addr >= f.symbol_start) {
    absl::StrAppendFormat(&line, " @ 0x%x+0x%x", f.symbol_start, f.addr - f.symbol_start);
  }
  if (!f.src_file.empty()) {
    absl::StrAppendFormat(&line, " %s:%d", f.src_file, f.line);
  }
  if (f.inlined) line += " (inlined)";
  if (!f.kernel && !f.dso.empty()) absl::StrAppendFormat(&line, " (%s)", f.dso);
  out << line << '\n';
}

}  // namespace

absl::Status WriteText(const std::vector<ResolvedSample>& samples, std::ostream& out) {
  return WriteText(BuildProfile(samples, /*keep_events=*/true), out);
}

absl::Status WriteText(const InternedProfile& profile, std::ostream& out) {
  const std::vector<InternedProfile::Event> events = EventsOf(profile);
  uint64_t t0 = UINT64_MAX;
  for (const InternedProfile::Event& e : events) t0 = std::min(t0, e.time_ns);
  for (const InternedProfile::Event& e : events) {
    const InternedProfile::Sample& s = profile.samples[e.sample];
    const std::string_view comm = profile.strings[s.comm];
    const uint64_t rel = e.time_ns - t0;
    out << absl::StrFormat("[%d.%06d] %s: %s (pid=%d, tid=%d) @ CPU %d\n", rel / 1000000000,
                           (rel / 1000) % 1000000, comm, comm, s.pid, s.tid, e.cpu);
    bool kernel_header = false, user_header = false;
    for (const FrameView& f : Frames(profile, s)) {
      if (f.kernel && !kernel_header) {
        out << "Kernel:\n";
        kernel_header = true;
      } else if (!f.kernel && !user_header) {
        out << "Userspace:\n";
        user_header = true;
      }
      WriteFrame(f, out);
    }
    out << '\n';
    if (!out) break;
  }
  out.flush();
  if (!out) return absl::DataLossError("text output: write failed");
  return absl::OkStatus();
}

}  // namespace ehprof
