#include "agent/session/capabilities.h"

#include <linux/capability.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ehprof {

bool HasCapability(int cap) {
  // capget(2) directly: libcap is not worth a dependency for one bit.
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3] = {};
  if (::syscall(SYS_capget, &header, data) != 0) return false;
  if (cap < 0 || cap >= 32 * _LINUX_CAPABILITY_U32S_3) return false;
  return (data[cap / 32].effective >> (cap % 32)) & 1u;
}

std::string MissingBpfCapabilities() {
  // The kernel's bpf_capable() and perfmon_capable() also accept
  // CAP_SYS_ADMIN.
  if (HasCapability(CAP_SYS_ADMIN)) return "";
  std::vector<std::string> missing;
  if (!HasCapability(CAP_BPF)) missing.push_back("CAP_BPF, for BPF maps and programs");
  if (!HasCapability(CAP_PERFMON)) {
    missing.push_back("CAP_PERFMON, for perf events and the tracing programs");
  }
  if (missing.empty()) return "";
  return absl::StrCat("missing ", absl::StrJoin(missing, ", and "),
                      "; run ehprof as root, or grant it CAP_BPF, CAP_PERFMON and CAP_SYS_PTRACE");
}

std::string BpfPermissionHint() {
  const std::string missing = MissingBpfCapabilities();
  if (missing.empty()) {
    return " (CAP_BPF and CAP_PERFMON are held: a security module, a user namespace, "
           "kernel.perf_event_paranoid or kernel.unprivileged_bpf_disabled may still forbid it)";
  }
  return absl::StrCat(" (", missing, ")");
}

absl::Status PermissionHint(int err, const std::string& what) {
  std::string msg = absl::StrCat(what, ": ", std::strerror(err < 0 ? -err : err));
  if (err == EPERM || err == -EPERM || err == EACCES || err == -EACCES) {
    absl::StrAppend(&msg, BpfPermissionHint());
    return absl::PermissionDeniedError(msg);
  }
  return absl::InternalError(msg);
}

}  // namespace ehprof
