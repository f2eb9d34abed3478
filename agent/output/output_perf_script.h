// Samples as `perf script -F comm,tid,ip,sym,dso` prints them (perf 6.1),
// so stackcollapse-perf.pl, speedscope, Firefox Profiler and the other
// tools that read perf's text take ehprof's output unchanged, and the two
// profilers' outputs can be diffed.
#ifndef EHPROF_AGENT_OUTPUT_OUTPUT_PERF_SCRIPT_H_
#define EHPROF_AGENT_OUTPUT_OUTPUT_PERF_SCRIPT_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/output/interned_profile.h"
#include "agent/resolve/resolved_sample.h"

namespace ehprof {

// Per sample, `count` times:
//   "COMM TID \n"                       (TID as "%5d", then a space)
//   "\t%16lx SYMBOL (DSO)\n"            per frame, leaf first
//   "\t%16lx SYMBOL (inlined)\n"        for an inlined frame (perf drops the dso)
//   "\n"
// Empty symbol/dso print as "[unknown]". Newlines and carriage returns in
// names become '?' (perf prints them raw, which splits the record).
absl::Status WritePerfScript(const std::vector<ResolvedSample>& samples, std::ostream& out);
// With srcline, each frame line is followed by its source position as
// `perf script -F +srcline` prints it ("  file:line", "??:0" unknown).
absl::Status WritePerfScript(const std::vector<ResolvedSample>& samples, std::ostream& out,
                             bool srcline);

// With an event name, the header is perf script's default one
//   "COMM TID [CPU] SECONDS.MICROS: PERIOD EVENT: \n"
// (what speedscope, npm flamegraph and the Firefox Profiler look for to
// recognise perf output: the time and the event).
struct PerfScriptOptions {
  bool srcline = false;
  std::string event;    // "cpu-clock"; empty: the short "COMM TID" header
  uint64_t period = 0;  // per sample (cpu-clock: 1e9 / Hz nanoseconds)
};
absl::Status WritePerfScript(const std::vector<ResolvedSample>& samples, std::ostream& out,
                             const PerfScriptOptions& options);
// Per event of the model, in order (a profile without events: per sample,
// at time 0, CPU 0); the ResolvedSample forms write through this.
absl::Status WritePerfScript(const InternedProfile& profile, std::ostream& out, const PerfScriptOptions& options);

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_OUTPUT_PERF_SCRIPT_H_
