// The tail-call build of the BPF programs (bpf/tailwalk.bpf.h), for kernels
// without bpf_loop: its bytes, which programs it adds beside the skeleton's,
// and the program arrays that chain them.
#ifndef EHPROF_AGENT_SESSION_TAIL_WALK_H_
#define EHPROF_AGENT_SESSION_TAIL_WALK_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

struct bpf_object;

namespace ehprof {

// The built-in tail-call build (bpf/CMakeLists.txt: profiler_compat.bpf.o),
// opened with the bpf_loop build's skeleton: the programs and maps of both
// carry the same names, the tail-call build has its walk programs besides.
// An error where this architecture has none (arm64 so far).
absl::StatusOr<std::string_view> TailCallObjectBytes();

// Whether obj is a tail-call build (has the walk programs).
bool IsTailCallBuild(bpf_object* obj);

// Before loading: each walk program loads when the program that starts its
// chain does.
void SetTailWalkAutoload(bpf_object* obj);

// After loading: each loaded walk program into its program array.
absl::Status FillTailWalkArrays(bpf_object* obj);

}  // namespace ehprof

#endif  // EHPROF_AGENT_SESSION_TAIL_WALK_H_
