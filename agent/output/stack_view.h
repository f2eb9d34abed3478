// --view: which frames of a stack the outputs show. The full view is every
// frame as the walk found it, native and runtime (Python, Java,
// JavaScript, Ruby, PHP, Perl) interleaved in the order they ran. The runtime view
// reads as py-spy, rbspy and phpspy show stacks: the native frames between
// two frames of one runtime (its interpreter loop, call glue, a JIT's
// stubs) are left out; those rootward of the outermost runtime frame (the
// process's start) and leafward of the innermost one (the C code a
// function called: where its time goes) stay, and so do those between
// frames of two different runtimes (the bridge from one to the other).
// Runtime frames are told from native ones by ResolvedFrame::runtime only,
// so a runtime added to FrameRuntime is covered as it is.
#ifndef EHPROF_AGENT_OUTPUT_STACK_VIEW_H_
#define EHPROF_AGENT_OUTPUT_STACK_VIEW_H_

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "agent/resolve/resolved_sample.h"

namespace ehprof {

enum class StackView : uint8_t { kFull, kRuntime };

// "full", "runtime" (as --view and the agent's labels spell them).
std::string_view StackViewName(StackView view);
std::optional<StackView> ParseStackView(std::string_view name);

// The frames of `frames` (leaf first) that `view` shows, leaf first, in
// their order; pointers into `frames`.
std::vector<const ResolvedFrame*> ShownFrames(const std::vector<ResolvedFrame>& frames, StackView view);

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_STACK_VIEW_H_
