#include "agent/output/stack_view.h"

namespace ehprof {

std::string_view StackViewName(StackView view) { return view == StackView::kRuntime ? "runtime" : "full"; }

std::optional<StackView> ParseStackView(std::string_view name) {
  if (name == "full") return StackView::kFull;
  if (name == "runtime") return StackView::kRuntime;
  return std::nullopt;
}

std::vector<const ResolvedFrame*> ShownFrames(const std::vector<ResolvedFrame>& frames, StackView view) {
  std::vector<const ResolvedFrame*> shown;
  shown.reserve(frames.size());
  // The runtime of the last runtime frame kept, and how many frames were
  // kept up to it: what follows it is native until the next runtime frame.
  FrameRuntime last = FrameRuntime::kNone;
  size_t through_last = 0;
  for (const ResolvedFrame& f : frames) {
    if (view == StackView::kRuntime && f.runtime != FrameRuntime::kNone) {
      // The native frames since a frame of the same runtime: its glue.
      if (f.runtime == last) shown.resize(through_last);
      last = f.runtime;
      shown.push_back(&f);
      through_last = shown.size();
      continue;
    }
    shown.push_back(&f);
  }
  return shown;
}

}  // namespace ehprof
