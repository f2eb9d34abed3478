// What the outputs say of each runtime's frames, in one row per runtime:
// a new runtime is one FrameRuntime value and one row here, not a case in
// every writer's switch.
#ifndef EHPROF_AGENT_RESOLVE_FRAME_RUNTIME_TRAITS_H_
#define EHPROF_AGENT_RESOLVE_FRAME_RUNTIME_TRAITS_H_

#include <string_view>

#include "agent/resolve/resolved_sample.h"

namespace ehprof {

struct FrameRuntimeTraits {
  std::string_view legend;     // the flame graph's legend: "Python"
  std::string_view what;       // the tooltip's line: "Python function"
  std::string_view otlp_type;  // OTLP's profile.frame.type attribute
  // The flame graph's colour range (HSL): hue .. hue + hue_span,
  // lightness .. lightness + lightness_span.
  double hue, hue_span, saturation, lightness, lightness_span;
};

// Runtimes with frames of their own: kNone's successors, in order.
inline constexpr int kFrameRuntimeCount = static_cast<int>(FrameRuntime::kPerl);

// kNone has none: nullptr.
const FrameRuntimeTraits* TraitsOf(FrameRuntime runtime);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RESOLVE_FRAME_RUNTIME_TRAITS_H_
