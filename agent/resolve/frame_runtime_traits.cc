#include "agent/resolve/frame_runtime_traits.h"

namespace ehprof {
namespace {

// Indexed by FrameRuntime - 1. Hues keep each runtime apart from native
// code's reds and oranges, the kernel's sky blue, off-CPU's and comm's
// purples, and from each other; lightness keeps the black labels legible.
constexpr FrameRuntimeTraits kTraits[kFrameRuntimeCount] = {
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

}  // namespace

const FrameRuntimeTraits* TraitsOf(FrameRuntime runtime) {
  const int i = static_cast<int>(runtime) - 1;
  return i >= 0 && i < kFrameRuntimeCount ? &kTraits[i] : nullptr;
}

}  // namespace ehprof
