// A std::streambuf over a file descriptor it does not own, writing 64 KiB
// at a time: the one buffered writer under ExclusiveFile and OutputTarget.
#ifndef EHPROF_BASE_FD_STREAMBUF_H_
#define EHPROF_BASE_FD_STREAMBUF_H_

#include <cerrno>
#include <streambuf>
#include <vector>

#include "base/fd_io.h"

namespace ehprof {

class FdStreamBuf : public std::streambuf {
 public:
  explicit FdStreamBuf(int fd) : fd_(fd), buf_(64 << 10) { setp(buf_.data(), buf_.data() + buf_.size()); }
  // The errno of the write(2) that failed; 0 while none did.
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

}  // namespace ehprof

#endif  // EHPROF_BASE_FD_STREAMBUF_H_
