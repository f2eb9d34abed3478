#include "base/exclusive_file.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/fd_streambuf.h"

namespace ehprof {

absl::StatusOr<ExclusiveFile> ExclusiveFile::Create(const std::string& prefix, const std::string& suffix) {
  std::string name = absl::StrCat(prefix, "XXXXXX", suffix);
  const int fd = ::mkostemps(name.data(), static_cast<int>(suffix.size()), O_CLOEXEC);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrCat("cannot create a file ", prefix, "XXXXXX", suffix, ": ",
                                                    std::strerror(errno)));
  }
  return ExclusiveFile(std::move(name), UniqueFd(fd));
}

ExclusiveFile::ExclusiveFile(std::string path, UniqueFd fd)
    : path_(std::move(path)), fd_(std::move(fd)), buf_(std::make_unique<FdStreamBuf>(fd_.get())),
      stream_(std::make_unique<std::ostream>(buf_.get())) {}

ExclusiveFile::ExclusiveFile(ExclusiveFile&& o) noexcept
    : path_(std::move(o.path_)), fd_(std::move(o.fd_)), done_(std::exchange(o.done_, true)),
      buf_(std::move(o.buf_)), stream_(std::move(o.stream_)) {}

ExclusiveFile& ExclusiveFile::operator=(ExclusiveFile&& o) noexcept {
  if (this != &o) {
    if (!done_ && !path_.empty()) ::unlink(path_.c_str());
    path_ = std::move(o.path_);
    fd_ = std::move(o.fd_);
    done_ = std::exchange(o.done_, true);
    buf_ = std::move(o.buf_);
    stream_ = std::move(o.stream_);
  }
  return *this;
}

ExclusiveFile::~ExclusiveFile() {
  if (!done_ && !path_.empty()) ::unlink(path_.c_str());
}

absl::Status ExclusiveFile::Commit(const std::string& final_path, mode_t mode) {
  stream_->flush();
  if (!*stream_) {
    return absl::DataLossError(absl::StrCat("writing ", path_, " failed (disk full?): ",
                                            std::strerror(buf_->saved_errno())));
  }
  if (mode != 0600 && ::fchmod(fd_.get(), mode) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("cannot chmod ", path_, ": ", std::strerror(errno)));
  }
  if (std::rename(path_.c_str(), final_path.c_str()) != 0) {
    return absl::PermissionDeniedError(
        absl::StrCat("cannot rename ", path_, " to ", final_path, ": ", std::strerror(errno)));
  }
  done_ = true;
  return absl::OkStatus();
}

}  // namespace ehprof
