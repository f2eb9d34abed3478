// An interactive flame graph as one self-contained SVG file: open it in a
// browser to hover for counts, click a frame to zoom into it, and search
// (a regular expression) to highlight frames and see their share.
//
// Layout: "all" at the bottom, the comm above it, then each stack's frames
// root first (the folded format's order, comm included), stacks merged on
// identical prefixes, siblings sorted by name so equal profiles give equal
// files. Width is proportional to the sample count. Colours tell the frame
// kind (user warm, kernel blue, inlined green, unresolved grey, comm purple),
// varied per name by a hash so neighbours stand apart.
//
// Opening it with `?s=REGEX` searches on load and `?z=NAME` zooms into the
// first frame called NAME (handy for links and for tests).
#ifndef EHPROF_AGENT_OUTPUT_OUTPUT_SVG_H_
#define EHPROF_AGENT_OUTPUT_OUTPUT_SVG_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/resolve/resolved_sample.h"

namespace ehprof {

struct FlameGraphOptions {
  std::string title = "Flame Graph";
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
absl::Status WriteFlameGraphSvg(const std::vector<ResolvedSample>& samples, std::ostream& out,
                                const FlameGraphOptions& options = {});

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_OUTPUT_SVG_H_
