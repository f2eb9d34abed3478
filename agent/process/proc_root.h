// Opening a file as a profiled process sees it, inside its own root.
//
// A process in a container or a chroot names its files relative to its
// root, which /proc/PID/root reaches. But opening "/proc/PID/root" + path
// resolves symlinks met on the way against OUR root: a container holding
// lib/evil.so -> /etc/shadow would make ehprof (root) read the host's file.
// openat2(RESOLVE_IN_ROOT) on the process's root keeps absolute symlinks and
// ".." inside it, the way the process itself would resolve them.
#ifndef EHPROF_AGENT_PROCESS_PROC_ROOT_H_
#define EHPROF_AGENT_PROCESS_PROC_ROOT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "base/unique_fd.h"

namespace ehprof {

// One process's root directory, held open (O_PATH) so that several files can
// be opened against the same root without re-reading /proc/PID/root.
class ProcessRoot {
 public:
  // NotFound when the process is gone; PermissionDenied (with the capability
  // to grant) for another user's process without CAP_SYS_PTRACE.
  static absl::StatusOr<ProcessRoot> Open(uint32_t pid);

  // `path` (absolute, as /proc/PID/maps names it) resolved with this root as
  // "/": symlinks, absolute or not, and ".." never leave it, and magic links
  // (/proc/self/...) are refused. Only regular files are opened (a FIFO or a
  // device put at a mapped file's path must not block or act on open).
  // Returns an O_RDONLY|O_CLOEXEC fd.
  absl::StatusOr<UniqueFd> OpenFile(const std::string& path) const;

  uint32_t pid() const { return pid_; }
  // Whether it is ehprof's own root (a process in no container or chroot):
  // then the process's paths are ours too.
  bool IsOurs() const;

 private:
  ProcessRoot(uint32_t pid, UniqueFd fd) : pid_(pid), fd_(std::move(fd)) {}
  uint32_t pid_;
  UniqueFd fd_;
};

// ProcessRoot::Open(pid) then OpenFile(path).
absl::StatusOr<UniqueFd> OpenInProcessRoot(uint32_t pid, const std::string& path);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PROCESS_PROC_ROOT_H_
