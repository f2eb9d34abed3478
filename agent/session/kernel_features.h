// What ehprof's BPF programs need from the kernel, probed before loading
// them: a kernel without one of these gets an error naming the feature and
// the first Linux version that has it, not a verifier or relocation error
// that says neither (5.10 fails with "number of funcs in func_info doesn't
// match number of subprogs" for want of bpf_loop).
#ifndef EHPROF_AGENT_SESSION_KERNEL_FEATURES_H_
#define EHPROF_AGENT_SESSION_KERNEL_FEATURES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace ehprof {

struct KernelFeature {
  std::string name;   // "bpf_loop"
  std::string since;  // "5.17": the first mainline release with it
  std::string why;    // what ehprof uses it for
  bool present = false;
  std::string detail;  // how the probe failed, when it did
  // Only the bpf_loop build needs it: without it the tail-call build loads
  // (bpf/tailwalk.bpf.h).
  bool loop_build_only = false;
};

// Probes each feature (needs CAP_BPF: the probes load tiny programs).
// EHPROF_PRETEND_OLD_KERNEL=1 in the environment reports the loop build's
// own helpers absent, so the tail-call build can be run on a new kernel.
std::vector<KernelFeature> ProbeKernelFeatures();

// OK when every feature the tail-call build needs is present; else
// FailedPrecondition naming the kernel release, each missing feature, and
// the version that has it.
absl::Status CheckKernelFeatures(const std::vector<KernelFeature>& features);

// Whether this kernel loads the tail-call build: a feature only the
// bpf_loop build needs is missing.
bool NeedsTailCallBuild(const std::vector<KernelFeature>& features);

// Whether perf_event programs here take only preallocated hash maps (before
// 6.1's BPF memory allocator; also with EHPROF_PRETEND_OLD_KERNEL=1). The
// process map is then preallocated, at most kPreallocatedProcs entries.
bool NeedsPreallocatedHashMaps();
constexpr uint32_t kPreallocatedProcs = 1024;

// One line for `ehprof check`: which walk this kernel runs, how deep, and
// why.
std::string WalkBuildLine(const std::vector<KernelFeature>& features);

// The running kernel's release (uname -r).
std::string KernelRelease();

}  // namespace ehprof

#endif  // EHPROF_AGENT_SESSION_KERNEL_FEATURES_H_
