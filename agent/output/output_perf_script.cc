#include "agent/output/output_perf_script.h"

#include <string>

#include "absl/strings/str_format.h"

namespace ehprof {
namespace {

std::string OneLine(std::string_view name) {
  if (name.empty()) return "[unknown]";
  std::string s(name);
  for (char& c : s) {
    if (c == '\n' || c == '\r') c = '?';
  }
  return s;
}

std::string FormatSample(const InternedProfile& p, const InternedProfile::Event& e, const PerfScriptOptions& o) {
  const InternedProfile::Sample& sample = p.samples[e.sample];
  const std::string_view comm = p.strings[sample.comm];
  const bool srcline = o.srcline;
  std::string text;
  if (o.event.empty()) {
    // perf 6.1 builtin-script.c: "%s " for the comm when a callchain
    // follows, "%5d " for the tid (signed: perf shows -1 for an unknown
    // thread).
    text = absl::StrFormat("%s %5d \n", OneLine(comm), static_cast<int32_t>(sample.tid));
  } else {
    // perf script's default fields: comm, tid, [cpu], time, period, event
    // (npm flamegraph's detector wants exactly these; a pid/tid pair
    // does not match it).
    text = absl::StrFormat("%s %5d [%03d] %d.%06d: %10d %s: \n", OneLine(comm),
                           static_cast<int32_t>(sample.tid), e.cpu, e.time_ns / 1000000000,
                           e.time_ns % 1000000000 / 1000,
                           // perf record --off-cpu's event: its period is the time blocked.
                           sample.off_cpu ? e.weight_ns / e.count : o.period,
                           sample.off_cpu ? std::string("offcpu-time") : OneLine(o.event));
  }
  for (const FrameView& f : Frames(p, sample)) {
    // evsel_fprintf.c: an inlined frame prints " (inlined)" instead of its dso.
    absl::StrAppendFormat(&text, "\t%16x %s (%s)\n", f.addr, OneLine(f.symbol),
                          f.inlined ? std::string("inlined") : OneLine(f.dso));
    // evsel_fprintf.c: map__fprintf_srcline(map, addr, "\n  ", fp).
    if (srcline) {
      if (f.src_file.empty()) {
        text += "  ??:0\n";
      } else {
        absl::StrAppendFormat(&text, "  %s:%d\n", OneLine(f.src_file), f.line);
      }
    }
  }
  text += '\n';
  return text;
}

}  // namespace

absl::Status WritePerfScript(const std::vector<ResolvedSample>& samples, std::ostream& out) {
  return WritePerfScript(samples, out, /*srcline=*/false);
}

absl::Status WritePerfScript(const std::vector<ResolvedSample>& samples, std::ostream& out,
                             bool srcline) {
  PerfScriptOptions o;
  o.srcline = srcline;
  return WritePerfScript(samples, out, o);
}

absl::Status WritePerfScript(const std::vector<ResolvedSample>& samples, std::ostream& out,
                             const PerfScriptOptions& options) {
  return WritePerfScript(BuildProfile(samples, /*keep_events=*/true), out, options);
}

absl::Status WritePerfScript(const InternedProfile& profile, std::ostream& out, const PerfScriptOptions& options) {
  for (const InternedProfile::Event& e : EventsOf(profile)) {
    if (e.count == 0) continue;
    const std::string text = FormatSample(profile, e, options);
    for (uint64_t i = 0; i < e.count && out; ++i) out << text;
  }
  out.flush();
  if (!out) return absl::DataLossError("perf script output: write failed");
  return absl::OkStatus();
}

}  // namespace ehprof
