// Opening a file that a local user may control (a mapped binary, its debug
// file, a name taken from one) without letting that user hang ehprof, make
// it act on a device, or read past a sane size.
//
// A FIFO at such a path blocks open(2) until someone writes to it; a device
// may act on open or read; a huge sparse file makes every size read from it
// plausible. So every such open here is O_RDONLY|O_NONBLOCK|O_CLOEXEC (a
// FIFO opens at once and a device cannot block), then fstat on the fd that
// was opened (not the path: it may change in between) must show a regular
// file no larger than the cap, before anyone reads a byte of it.
#ifndef EHPROF_BASE_UNTRUSTED_FILE_H_
#define EHPROF_BASE_UNTRUSTED_FILE_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "base/unique_fd.h"

namespace ehprof {

// Whether the last component of the path may be a symbolic link.
enum class LinkPolicy {
  // O_NOFOLLOW: for a path composed from a name a user wrote (a
  // .gnu_debuglink beside the binary): a symlink there would make ehprof
  // open whatever the user points it at with ehprof's rights.
  kNoFollow,
  // Followed: the kernel's own links (/proc/PID/map_files/*,
  // /proc/self/fd/N name exactly the file a process mapped or ehprof
  // holds), and paths in root-owned directories or given on the command
  // line by whoever runs ehprof.
  kFollow,
};

// Larger than any real ELF file ehprof reads (a browser's debug file is
// about 3 GB); a sparse file past it only pretends to hold that much.
inline constexpr uint64_t kMaxUntrustedFileBytes = uint64_t{8} << 30;

// Opens `path` O_RDONLY|O_NONBLOCK|O_CLOEXEC (|O_NOFOLLOW per `links`) and
// returns the fd once fstat shows a regular file of at most `max_bytes`.
// Errors name the path and what it is: NotFound (no such file, or a
// symlink refused), FailedPrecondition (a FIFO, device, socket or
// directory), ResourceExhausted (too large), or the errno's code.
absl::StatusOr<UniqueFd> OpenUntrustedFile(const std::string& path, LinkPolicy links,
                                           uint64_t max_bytes = kMaxUntrustedFileBytes);

// The same checks on an fd opened elsewhere (openat2, a kept fd): a
// regular file of at most `max_bytes`; `name` is used in the error.
absl::Status CheckUntrustedFd(int fd, const std::string& name,
                              uint64_t max_bytes = kMaxUntrustedFileBytes);

}  // namespace ehprof

#endif  // EHPROF_BASE_UNTRUSTED_FILE_H_
