// A file a user named for ehprof to write (-o, --compare, --diff-folded,
// --verify-report, compare --diff), opened before any work starts so that a
// path that cannot be written is said at once, and written so that ehprof
// running as root never writes through something another user planted:
//   "-"                      standard output, in place (fd 1 at its offset);
//   no such file, a regular  an ExclusiveFile beside it (0600 from its
//   file (not a link)        creation), renamed over the name at Commit;
//   a symbolic link          followed only when root or this user owns it
//                            (refused otherwise: never written through);
//   a pipe, socket or        written in place when root or this user owns
//   character device         it (-o /dev/null, a FIFO of one's own); one
//                            that is standard output's file is written
//                            through fd 1 (-o /dev/stdout > FILE);
//   anything else            refused (a directory, a block device).
// A link is never renamed over: renaming over /dev/stdout would replace it
// for the whole system.
#ifndef EHPROF_BASE_OUTPUT_TARGET_H_
#define EHPROF_BASE_OUTPUT_TARGET_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/exclusive_file.h"
#include "base/unique_fd.h"

namespace ehprof {

class FdStreamBuf;

class OutputTarget {
 public:
  // PermissionDenied / NotFound / FailedPrecondition naming the path and why.
  static absl::StatusOr<OutputTarget> Open(const std::string& path, mode_t mode = 0600);

  OutputTarget(OutputTarget&&) noexcept;
  OutputTarget& operator=(OutputTarget&&) noexcept;
  ~OutputTarget();

  const std::string& path() const { return path_; }
  std::ostream& stream();

  // Finishes the file: flushes, then renames the temporary file into place
  // (or cuts a file written in place to what was written). DataLoss when a
  // write failed (disk full, a closed pipe): nothing usable is left, the
  // caller writes elsewhere. When only the rename failed, the file is kept
  // and the error says where it is.
  absl::Status Commit();

 private:
  OutputTarget(std::string path, mode_t mode, std::optional<ExclusiveFile> file, UniqueFd fd, bool truncate);

  std::string path_;
  mode_t mode_ = 0600;
  std::optional<ExclusiveFile> file_;  // a file renamed into place
  UniqueFd fd_;                        // else: written in place
  bool truncate_ = false;              // a regular file written in place
  std::unique_ptr<FdStreamBuf> buf_;
  std::unique_ptr<std::ostream> stream_;
};

// A directory ehprof writes files into (--save-captures, --output-dir):
// made 0700 when missing; refused when it is a link or a directory owned by
// another user than root and this one (that user could swap it for a link
// to anywhere while files are written). `flag` names it in the error.
absl::Status MakeOwnDirectory(const std::string& dir, const std::string& flag);

// A log appended to (--log): opened O_APPEND|O_CREAT|O_NOFOLLOW (0600 when
// made), and refused unless it is a regular file of this user with one link
// (a hard link someone made to another file is not appended to).
absl::StatusOr<UniqueFd> OpenLogFile(const std::string& path);

}  // namespace ehprof

#endif  // EHPROF_BASE_OUTPUT_TARGET_H_
