#include "agent/output/output_formats.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/output/output_svg.h"
#include "agent/output/output_text.h"

namespace ehprof {
namespace {

absl::Status Folded(const InternedProfile& p, const OutputSettings& s, std::ostream& out) {
  return WriteFolded(p, out, s.folded);
}

absl::Status Svg(const InternedProfile& p, const OutputSettings& s, std::ostream& out) {
  uint64_t total = 0;
  for (const InternedProfile::Sample& sample : p.samples) total += SampleValue(sample);
  FlameGraphOptions fg;
  const std::string& ns = s.pprof.ns_type;
  fg.nanoseconds = !ns.empty();
  fg.details = s.svg_details;
  fg.title = ns == "wall"      ? absl::StrFormat("ehprof: %.3f s wall time (on and off CPU)", total / 1e9)
             : ns == "off_cpu" ? absl::StrFormat("ehprof: %.3f s off-CPU", total / 1e9)
                               : absl::StrCat("ehprof: ", total, " samples");
  return WriteFlameGraphSvg(p, out, fg);
}

absl::Status Pprof(const InternedProfile& p, const OutputSettings& s, std::ostream& out) {
  std::vector<uint32_t> all(p.samples.size());
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  return WritePprof(p, all, out, s.pprof);
}

absl::Status PerfScript(const InternedProfile& p, const OutputSettings& s, std::ostream& out) {
  return WritePerfScript(p, out, s.script);
}

absl::Status Text(const InternedProfile& p, const OutputSettings&, std::ostream& out) { return WriteText(p, out); }

}  // namespace

const std::vector<OutputFormat>& OutputFormats() {
  static const std::vector<OutputFormat> kFormats = {
      {"svg", {".svg"}, false, true, Svg},
      {"folded", {".folded", ".collapsed"}, false, true, Folded},
      // Also what a path no ending names is written as (FormatForPath).
      {"perf-script", {".perf"}, true, false, PerfScript},
      {"pprof", {".pb.gz", ".pprof"}, false, false, Pprof},
      {"text", {}, true, false, Text},
  };
  return kFormats;
}

const OutputFormat* FindOutputFormat(std::string_view name) {
  for (const OutputFormat& f : OutputFormats()) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const OutputFormat& FormatForPath(std::string_view path) {
  for (const OutputFormat& f : OutputFormats()) {
    for (std::string_view ext : f.extensions) {
      if (path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext) return f;
    }
  }
  return *FindOutputFormat("perf-script");
}

std::string OutputFormatNames() {
  std::string out;
  for (const OutputFormat& f : OutputFormats()) {
    if (!out.empty()) out += " | ";
    out += f.name;
  }
  return out;
}

}  // namespace ehprof
