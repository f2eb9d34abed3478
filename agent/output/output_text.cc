#include "agent/output/output_text.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace ehprof {
namespace {

void WriteFrame(const ResolvedFrame& f, std::ostream& out) {
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
  uint64_t t0 = UINT64_MAX;
  for (const ResolvedSample& s : samples) t0 = std::min(t0, s.time_ns);
  for (const ResolvedSample& s : samples) {
    const uint64_t rel = s.time_ns - t0;
    out << absl::StrFormat("[%d.%06d] %s: %s (pid=%d, tid=%d) @ CPU %d\n", rel / 1000000000,
                           (rel / 1000) % 1000000, s.comm, s.comm, s.pid, s.tid, s.cpu);
    bool kernel_header = false, user_header = false;
    for (const ResolvedFrame& f : s.frames) {
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
