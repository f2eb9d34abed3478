// What ehprof's BPF programs need from the kernel, probed before loading
// them: a kernel without one of these gets an error naming the feature and
// the first Linux version that has it, not a verifier or relocation error
// that says neither (5.10 fails with "number of funcs in func_info doesn't
// match number of subprogs" for want of bpf_loop).
#ifndef EHPROF_AGENT_SESSION_KERNEL_FEATURES_H_
#define EHPROF_AGENT_SESSION_KERNEL_FEATURES_H_

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
};

// Probes each feature (needs CAP_BPF: the probes load tiny programs).
std::vector<KernelFeature> ProbeKernelFeatures();

// OK when every feature is present; else FailedPrecondition naming the
// kernel release, each missing feature, and the version that has it.
absl::Status CheckKernelFeatures(const std::vector<KernelFeature>& features);

// The running kernel's release (uname -r).
std::string KernelRelease();

}  // namespace ehprof

#endif  // EHPROF_AGENT_SESSION_KERNEL_FEATURES_H_
