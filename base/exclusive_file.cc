#include "base/exclusive_file.h"

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <streambuf>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/fd_io.h"

namespace ehprof {

// A std::streambuf over a file descriptor, writing 64 KiB at a time.
class ExclusiveFile::FdBuf : public std::streambuf {
 public:
  explicit FdBuf(int fd) : fd_(fd), buf_(64 << 10) { setp(buf_.data(), buf_.data() + buf_.size()); }
  int saved_errno() const { return errno_; }

 protected:
  int_type overflow(int_type c) override {
    if (!Drain()) return traits_type::eof();
    if (!traits_type::eq_int_type(c, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(c);
      pbump(1);
    }
    return traits_type::not_eof(c);
  }
  int sync() override { return Drain() ? 0 : -1; }

 private:
  bool Drain() {
    if (!WriteFull(fd_, pbase(), static_cast<size_t>(pptr() - pbase()))) {
      errno_ = errno;
      return false;
    }
    setp(buf_.data(), buf_.data() + buf_.size());
    return true;
  }

  int fd_;
  int errno_ = 0;
  std::vector<char> buf_;
};

absl::StatusOr<ExclusiveFile> ExclusiveFile::Create(const std::string& prefix, const std::string& suffix) {
  std::string name = absl::StrCat(prefix, "XXXXXX", suffix);
  const int fd = ::mkstemps(name.data(), static_cast<int>(suffix.size()));
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrCat("cannot create a file ", prefix, "XXXXXX", suffix, ": ",
                                                    std::strerror(errno)));
  }
  return ExclusiveFile(std::move(name), UniqueFd(fd));
}

ExclusiveFile::ExclusiveFile(std::string path, UniqueFd fd)
    : path_(std::move(path)), fd_(std::move(fd)), buf_(std::make_unique<FdBuf>(fd_.get())),
      stream_(std::make_unique<std::ostream>(buf_.get())) {}
ExclusiveFile::ExclusiveFile(ExclusiveFile&&) noexcept = default;
ExclusiveFile& ExclusiveFile::operator=(ExclusiveFile&&) noexcept = default;
ExclusiveFile::~ExclusiveFile() = default;

absl::Status ExclusiveFile::Commit(const std::string& final_path, mode_t mode) {
  stream_->flush();
  if (!*stream_) {
    return absl::DataLossError(absl::StrCat("writing ", path_, " failed (disk full?): ",
                                            std::strerror(buf_->saved_errno()), "; partial output kept there"));
  }
  if (mode != 0600 && ::fchmod(fd_.get(), mode) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("cannot chmod ", path_, ": ", std::strerror(errno)));
  }
  if (std::rename(path_.c_str(), final_path.c_str()) != 0) {
    return absl::PermissionDeniedError(absl::StrCat("cannot rename ", path_, " to ", final_path, ": ",
                                                    std::strerror(errno), "; the file is in ", path_));
  }
  return absl::OkStatus();
}

}  // namespace ehprof
