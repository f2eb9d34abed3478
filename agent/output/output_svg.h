// An interactive flame graph as one self-contained SVG file: open it in a
// browser to hover for counts, click a frame to zoom into it, and search to
// highlight frames and see their share.
//
// Layout: "all" at the bottom, the comm above it, then each stack's frames
// root first (the folded format's order, comm included), stacks merged on
// identical prefixes, siblings sorted by name so equal profiles give equal
// files. Width is proportional to the sample count. Colours tell the frame
// kind (executable's code red-orange, library code orange-yellow, kernel
// blue, inlined green, unresolved grey, comm purple), varied per name by a
// hash so neighbours stand apart; a legend above the frames names them.
// Tooltips say the kind, the file the code is in and, where the debug info
// gave the frames a source position, file:line.
//
// The title is options.title with options.details (what was recorded, how,
// when) on a second line. The file says a fixed width and height (viewBox
// too), so tools that do not run scripts (image viewers, <img>, converters)
// draw it as written; in a browser the script lays it out again to the
// window's width on load and on resize.
//
// Search (the Search button, Ctrl+F or F3) matches a plain substring,
// case-sensitively: "[fio]" and "operator()" find themselves. A term written
// /REGEX/ (or /REGEX/i, ignoring case) is a JavaScript regular expression.
// The matched share is of all samples and, when zoomed, of the zoomed frame's.
// Opening it with `?s=TEXT` searches for TEXT literally on load, `?re=REGEX`
// with a regular expression, and `?z=NAME` zooms into the first frame called
// NAME (handy for links and for tests).
#ifndef EHPROF_AGENT_OUTPUT_OUTPUT_SVG_H_
#define EHPROF_AGENT_OUTPUT_OUTPUT_SVG_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/output/interned_profile.h"
#include "agent/resolve/resolved_sample.h"

namespace ehprof {

struct FlameGraphOptions {
  std::string title = "Flame Graph";
  // A second line under the title, e.g. FlameGraphDetails'. Empty: none.
  std::string details;
  // Of the whole image, in pixels.
  double width = 1200;
  // Frames narrower than this many pixels are left out, with everything
  // above them: they could not be seen or clicked, and deep narrow towers
  // are most of a big profile's bytes. Their samples still count in the
  // frames below. 0 draws everything.
  double min_frame_width = 0.1;
  // Widths are nanoseconds (off-CPU time), shown in ms, not sample counts.
  bool nanoseconds = false;
};

// Samples with count 0 are ignored; with no samples at all the image says
// "no samples". Names are escaped for XML (invalid UTF-8 and control
// characters become '?'); an empty name is "[unknown]", and an unresolved
// frame in a known file is "[FILE]" (the file's base name). Errors:
// InvalidArgument for a bad width, DataLoss when `out` fails.
absl::Status WriteFlameGraphSvg(const InternedProfile& profile, std::ostream& out,
                                const FlameGraphOptions& options = {});
// The same of resolved samples (through the model).
absl::Status WriteFlameGraphSvg(const std::vector<ResolvedSample>& samples, std::ostream& out,
                                const FlameGraphOptions& options = {});

// "COMMAND | 99 Hz | 2.00 s | 2026-11-25 16:40:00 UTC", leaving out what is
// 0 or empty (no rate for counted events, say): the recording the graph is of.
std::string FlameGraphDetails(const std::string& command, uint64_t frequency_hz, double seconds,
                              int64_t start_unix_ns);

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_OUTPUT_SVG_H_
