// Which capabilities ehprof holds, to say which one is missing when the
// kernel refuses something (rather than "needs root").
//
// What each is for (see docs/KERNELS.md, "Kernel requirements and privileges"):
//   CAP_BPF          BPF maps and programs
//   CAP_PERFMON      perf events, the tracing programs, /proc/PID/maps of
//                    other users' processes
//   CAP_SYS_PTRACE   /proc/PID/root of other users' processes (their files)
//   CAP_SYS_ADMIN    stands in for CAP_BPF and CAP_PERFMON
#ifndef EHPROF_AGENT_SESSION_CAPABILITIES_H_
#define EHPROF_AGENT_SESSION_CAPABILITIES_H_

#include <string>

#include "absl/status/status.h"

namespace ehprof {

// Whether the calling thread's effective set holds `cap` (a CAP_* number
// from <linux/capability.h>).
bool HasCapability(int cap);

// "" when CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN) are effective, else
// which are missing and what each is for. Without them the kernel refuses
// every program ehprof loads, so this is checked before libbpf starts (its
// own complaint blames RLIMIT_MEMLOCK).
std::string MissingBpfCapabilities();

// For a BPF or perf_event_open call refused with EPERM/EACCES: names the
// missing capabilities among CAP_BPF and CAP_PERFMON and what each is for,
// or, when both are held, what else can forbid it. Starts with " (".
std::string BpfPermissionHint();

// "WHAT: strerror(err)", with BpfPermissionHint() when err is EPERM/EACCES
// (PermissionDenied), else Internal. err may be negative (libbpf's way).
absl::Status PermissionHint(int err, const std::string& what);

}  // namespace ehprof

#endif  // EHPROF_AGENT_SESSION_CAPABILITIES_H_
