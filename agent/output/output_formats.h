// Every profile format ehprof writes, in one table: a format is its name,
// the file name endings that imply it, what it needs of the model, and its
// writer. `ehprof record` (every -o) and anything else that writes a
// profile file go through it; a new format is one entry in
// output_formats.cc.
#ifndef EHPROF_AGENT_OUTPUT_OUTPUT_FORMATS_H_
#define EHPROF_AGENT_OUTPUT_OUTPUT_FORMATS_H_

#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "agent/output/interned_profile.h"
#include "agent/output/output_folded.h"
#include "agent/output/output_perf_script.h"
#include "agent/output/output_pprof.h"

namespace ehprof {

// The settings of every writer: each reads its own.
struct OutputSettings {
  PprofOptions pprof;  // its ns_type also says what the SVG's widths are
  PerfScriptOptions script;
  FoldedOptions folded;
  std::string svg_details;  // FlameGraphOptions::details
};

struct OutputFormat {
  std::string_view name;
  // File name endings that imply it (FormatForPath); none: only by name.
  std::vector<std::string_view> extensions;
  // Prints each sample with its time and CPU (the model's events): the
  // recording must keep samples one by one, not summed by stack.
  bool per_sample = false;
  // Under --wall, sums every thread's time by stack, so each thread is
  // made its own tower (comm "comm-pid/tid"); others keep the thread as
  // a field or label.
  bool per_thread_wall = false;
  absl::Status (*write)(const InternedProfile& profile, const OutputSettings& settings, std::ostream& out) = nullptr;
};

// The table, in the order --help names them.
const std::vector<OutputFormat>& OutputFormats();
// nullptr when there is no such format.
const OutputFormat* FindOutputFormat(std::string_view name);
// The format a path's ending implies; perf-script when none does.
const OutputFormat& FormatForPath(std::string_view path);
// "svg | folded | ..." for help texts.
std::string OutputFormatNames();

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_OUTPUT_FORMATS_H_
