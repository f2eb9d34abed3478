#include "agent/process/proc_root.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "agent/process/resolve_in_root.h"
#include "base/untrusted_file.h"

namespace ehprof {
namespace {

absl::Status OpenError(uint32_t pid, const std::string& what, int err, const char* hint = "") {
  return absl::Status(absl::ErrnoToStatusCode(err),
                      absl::StrCat("pid ", pid, ": cannot open ", what, ": ", std::strerror(err), hint));
}

}  // namespace

absl::StatusOr<ProcessRoot> ProcessRoot::Open(uint32_t pid) {
  const std::string root = absl::StrCat("/proc/", pid, "/root");
  // Following this one magic link is the point: it is the process's root.
  UniqueFd fd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) {
    const int err = errno;
    return OpenError(pid, root, err,
                     err == EACCES || err == EPERM
                         ? " (another user's process: reading its files needs CAP_SYS_PTRACE)"
                         : "");
  }
  return ProcessRoot(pid, std::move(fd));
}

absl::StatusOr<UniqueFd> ProcessRoot::OpenFile(const std::string& path) const {
  const std::string what = absl::StrCat(path, " in its root");
  open_how how{};
  // O_PATH: nothing is opened for reading until the file is known to be a
  // regular file (opening a FIFO blocks; opening some devices acts).
  how.flags = O_PATH | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  long fd = -1;
  // EAGAIN: a rename or mount raced with a ".." lookup; the kernel asks
  // to retry rather than risk an escape.
  for (int attempt = 0; attempt < 8; ++attempt) {
    fd = ::syscall(SYS_openat2, fd_.get(), path.c_str(), &how, sizeof(how));
    if (fd >= 0 || errno != EAGAIN) break;
  }
  // Refused (a seccomp filter: the unit's; or a kernel before 5.6): the
  // same resolution, step by step.
  if (fd < 0 && errno == ENOSYS) fd = ResolveInRoot(fd_.get(), path).release();
  if (fd < 0) {
    const int err = errno;
    return OpenError(pid_, what, err, err == ELOOP ? " (a magic link or too many symlinks)" : "");
  }
  UniqueFd path_fd(static_cast<int>(fd));
  // A regular file of a sane size (a sparse file claiming terabytes makes
  // every size read from it a lie), as every file a user controls.
  if (absl::Status ok = CheckUntrustedFd(path_fd.get(), absl::StrCat("pid ", pid_, ": ", what)); !ok.ok()) {
    return ok;
  }
  // Reopening the O_PATH fd through its /proc/self/fd link opens exactly
  // the inode found above, with our own permission checks (O_NONBLOCK: a
  // mandatory lock cannot make the read wait).
  UniqueFd file(::open(absl::StrCat("/proc/self/fd/", path_fd.get()).c_str(),
                       O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!file.valid()) return OpenError(pid_, what, errno);
  return file;
}

bool ProcessRoot::IsOurs() const {
  struct stat theirs, ours;
  return ::fstat(fd_.get(), &theirs) == 0 && ::stat("/", &ours) == 0 &&
         theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino;
}

absl::StatusOr<UniqueFd> OpenInProcessRoot(uint32_t pid, const std::string& path) {
  absl::StatusOr<ProcessRoot> root = ProcessRoot::Open(pid);
  if (!root.ok()) return root.status();
  return root->OpenFile(path);
}

}  // namespace ehprof
