// A file created exclusively under a name nobody can predict, written
// through a std::ostream, then renamed into place: a writer running as root
// in a shared directory (/tmp, a service's output directory) never follows a
// link or opens a file someone else made there. The rename replaces the
// directory entry at the final name whatever it is (a link is replaced, not
// followed; a hard link to another file leaves that file alone). In a sticky
// directory (/tmp) the rename over another user's entry fails with EPERM
// unless the writer has CAP_FOWNER (root does): then Commit fails and the
// caller decides where the data goes.
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

class FdStreamBuf;

class ExclusiveFile {
 public:
  // Creates PREFIX + 6 random characters + SUFFIX with O_CREAT|O_EXCL and
  // mode 0600 (mkstemps); the error names the directory and why.
  static absl::StatusOr<ExclusiveFile> Create(const std::string& prefix, const std::string& suffix = "");

  ExclusiveFile(ExclusiveFile&&) noexcept;
  ExclusiveFile& operator=(ExclusiveFile&&) noexcept;
  // Removes the temporary file unless it was committed or kept: no failure
  // path leaves one behind.
  ~ExclusiveFile();

  const std::string& path() const { return path_; }
  // Buffered writes to the file; a failed write(2) sets badbit.
  std::ostream& stream() { return *stream_; }

  // Flushes (DataLoss naming the file when that fails: disk full), sets
  // the mode when it is not 0600, renames the file to final_path. On an
  // error the file is still at path() until destruction or Keep().
  absl::Status Commit(const std::string& final_path, mode_t mode = 0600);
  // Leaves the file at path() after destruction (a profile that could not
  // be renamed into place is still the user's).
  void Keep() { done_ = true; }

 private:
  ExclusiveFile(std::string path, UniqueFd fd);

  std::string path_;
  UniqueFd fd_;
  bool done_ = false;
  std::unique_ptr<FdStreamBuf> buf_;
  std::unique_ptr<std::ostream> stream_;
};

}  // namespace ehprof

#endif  // EHPROF_BASE_EXCLUSIVE_FILE_H_
