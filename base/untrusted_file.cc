#include "base/untrusted_file.h"

#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace ehprof {
namespace {

const char* KindOf(mode_t mode) {
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISLNK(mode)) return "a symbolic link";
  return "not a regular file";
}

}  // namespace

absl::Status CheckUntrustedFd(int fd, const std::string& name, uint64_t max_bytes) {
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    return absl::Status(absl::ErrnoToStatusCode(err),
                        absl::StrCat(name, ": cannot stat: ", std::strerror(err)));
  }
  if (!S_ISREG(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(name, ": not read: ", KindOf(st.st_mode), ", not a regular file"));
  }
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat(name, ": not read: ", st.st_size,
                                                     " bytes, over the ", max_bytes,
                                                     " a file read here may have"));
  }
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> OpenUntrustedFile(const std::string& path, LinkPolicy links,
                                           uint64_t max_bytes) {
  if (path.empty() || path.find('\0') != std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat("not a file name: \"", path, "\""));
  }
  // O_PATH first: nothing is opened for reading (a device's open cannot
  // act, a FIFO's cannot block) until fstat has seen a regular file. With
  // O_NOFOLLOW, O_PATH opens a symlink itself, which fstat then refuses.
  UniqueFd path_fd(::open(path.c_str(), O_PATH | O_CLOEXEC |
                                            (links == LinkPolicy::kNoFollow ? O_NOFOLLOW : 0)));
  if (!path_fd.valid()) {
    const int err = errno;
    return absl::Status(absl::ErrnoToStatusCode(err),
                        absl::StrCat(path, ": cannot open: ", std::strerror(err)));
  }
  struct stat found;
  if (::fstat(path_fd.get(), &found) != 0) {
    const int err = errno;
    return absl::Status(absl::ErrnoToStatusCode(err),
                        absl::StrCat(path, ": cannot stat: ", std::strerror(err)));
  }
  if (!S_ISREG(found.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        path, ": not read: ", KindOf(found.st_mode), ", not a regular file"));
  }
  // Reopening through the O_PATH fd's /proc/self/fd link opens exactly the
  // inode checked above, with our own permission checks. O_NONBLOCK
  // still, should /proc be something else.
  const std::string reopen = absl::StrCat("/proc/self/fd/", path_fd.get());
  UniqueFd fd(::open(reopen.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY));
  if (!fd.valid()) {
    const int err = errno;
    return absl::Status(absl::ErrnoToStatusCode(err),
                        absl::StrCat(path, ": cannot open: ", std::strerror(err)));
  }
  if (absl::Status s = CheckUntrustedFd(fd.get(), path, max_bytes); !s.ok()) return s;
  return fd;
}

}  // namespace ehprof
