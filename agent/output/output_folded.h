// Folded stacks ("collapsed" format), the input of flamegraph.pl, inferno,
// speedscope and difffolded.pl: one line per distinct stack,
//   COMM;ROOT;...;LEAF COUNT
// as perf's own scripts/python/stackcollapse.py writes it (comm included,
// "[unknown]" for unresolved frames, lines sorted bytewise). Names are
// plain by default, as stackcollapse-perf.pl writes them; with annotate,
// its --all annotations: kernel frames end in "_[k]", inlined frames in
// "_[i]" (which wins for an inlined kernel frame, as it does in
// stackcollapse-perf.pl), JIT frames in "_[j]".
#ifndef EHPROF_AGENT_OUTPUT_OUTPUT_FOLDED_H_
#define EHPROF_AGENT_OUTPUT_OUTPUT_FOLDED_H_

#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/output/interned_profile.h"
#include "agent/resolve/resolved_sample.h"

namespace ehprof {

struct FoldedOptions {
  // Frames with a source position read "name (file:line)": a flame graph
  // split by line.
  bool srcline = false;
  // "_[k]", "_[i]", "_[j]" suffixes (stackcollapse-perf.pl --all), which
  // flamegraph.pl --color=java colours by.
  bool annotate = false;
};

// Counts are summed over samples with the same comm and frames; stacks
// with a zero total are left out. Names are made safe for the format:
// ';' becomes ':' and control characters '?' (both would split a frame or a
// line); spaces in the comm, and trailing spaces of a frame, become '_'
// (the count is the text after the last space); an empty name is
// "[unknown]".
absl::Status WriteFolded(const InternedProfile& profile, std::ostream& out, const FoldedOptions& options = {});
// The same of resolved samples (through the model).
absl::Status WriteFolded(const std::vector<ResolvedSample>& samples, std::ostream& out,
                         const FoldedOptions& options = {});

// One frame's name as WriteFolded writes it, suffix included.
std::string FoldedFrameName(const FrameView& frame, const FoldedOptions& options = {});
// One sample's line as WriteFolded writes it, without the count:
// "comm;root;...;leaf".
std::string FoldedStack(const ResolvedSample& sample, const FoldedOptions& options = {});

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_OUTPUT_FOLDED_H_
