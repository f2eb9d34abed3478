// What the outputs say of each runtime's frames, in one row per runtime:
// a new runtime is one FrameRuntime value and one row here, not a case in
// every writer's switch. Header only: the writers (agent/output, agent/sink)
// read resolve/ through its headers.
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

// Indexed by FrameRuntime - 1. Hues keep each runtime apart from native
// code's reds and oranges, the kernel's sky blue, off-CPU's and comm's
// purples, and from each other; lightness keeps the black labels legible.
inline constexpr FrameRuntimeTraits kFrameRuntimeTraits[kFrameRuntimeCount] = {
    // Teal.
    {"Python", "Python function", "cpython", 160, 18, 0.55, 0.48, 0.10},
    // Green-yellow, as async-profiler draws Java.
    {"Java", "Java method", "jvm", 75, 20, 0.60, 0.45, 0.10},
    // Pink: a hue no other kind comes near.
    {"JavaScript", "JavaScript function", "v8js", 318, 18, 0.60, 0.64, 0.08},
    // Ruby's red, deeper than native code's and past the JavaScript pink.
    {"Ruby", "Ruby method or block", "ruby", 344, 10, 0.70, 0.50, 0.08},
    // PHP's blue-violet (its logo's).
    {"PHP", "PHP function", "php", 232, 14, 0.45, 0.64, 0.08},
    {"Perl", "Perl sub", "perl", 298, 12, 0.40, 0.68, 0.08},
};

// kNone has none: nullptr.
inline const FrameRuntimeTraits* TraitsOf(FrameRuntime runtime) {
  const int i = static_cast<int>(runtime) - 1;
  return i >= 0 && i < kFrameRuntimeCount ? &kFrameRuntimeTraits[i] : nullptr;
}

}  // namespace ehprof

#endif  // EHPROF_AGENT_RESOLVE_FRAME_RUNTIME_TRAITS_H_
