// A file created exclusively under a name nobody can predict, written
// through a std::ostream, then renamed into place: a writer running as root
// in a shared directory (/tmp, a service's output directory) never follows a
// link or opens a file someone else made there.
#ifndef EHPROF_BASE_EXCLUSIVE_FILE_H_
#define EHPROF_BASE_EXCLUSIVE_FILE_H_

#include <sys/types.h>

#include <memory>
#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/unique_fd.h"

namespace ehprof {

class ExclusiveFile {
 public:
  // Creates PREFIX + 6 random characters + SUFFIX with O_CREAT|O_EXCL and
  // mode 0600 (mkstemps); the error names the directory and why.
  static absl::StatusOr<ExclusiveFile> Create(const std::string& prefix, const std::string& suffix = "");

  ExclusiveFile(ExclusiveFile&&) noexcept;
  ExclusiveFile& operator=(ExclusiveFile&&) noexcept;
  ~ExclusiveFile();

  const std::string& path() const { return path_; }
  // Buffered writes to the file; a failed write(2) sets badbit.
  std::ostream& stream() { return *stream_; }

  // Flushes (DataLoss naming the file, which keeps what was written, when
  // that fails: disk full), sets the mode when it is not 0600, renames the
  // file to final_path.
  absl::Status Commit(const std::string& final_path, mode_t mode = 0600);

 private:
  class FdBuf;
  ExclusiveFile(std::string path, UniqueFd fd);

  std::string path_;
  UniqueFd fd_;
  std::unique_ptr<FdBuf> buf_;
  std::unique_ptr<std::ostream> stream_;
};

}  // namespace ehprof

#endif  // EHPROF_BASE_EXCLUSIVE_FILE_H_
