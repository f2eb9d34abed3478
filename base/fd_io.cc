#include "base/fd_io.h"

#include <unistd.h>

#include <cerrno>

namespace ehprof {
namespace {

// The loop of ReadFull and PreadFull: `step(at, len, done)` reads up to
// len bytes into at, done bytes having been read before.
template <typename Step>
ssize_t ReadLoop(void* buf, size_t n, Step step) {
  size_t got = 0;
  while (got < n) {
    const ssize_t r = step(static_cast<uint8_t*>(buf) + got, n - got, got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return -1;
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return static_cast<ssize_t>(got);
}

}  // namespace

ssize_t ReadFull(int fd, void* buf, size_t n) {
  return ReadLoop(buf, n, [fd](uint8_t* at, size_t len, size_t) { return ::read(fd, at, len); });
}

ssize_t PreadFull(int fd, void* buf, size_t n, uint64_t offset) {
  return ReadLoop(buf, n, [fd, offset](uint8_t* at, size_t len, size_t done) {
    return ::pread(fd, at, len, static_cast<off_t>(offset + done));
  });
}

bool WriteFull(int fd, const void* buf, size_t n) {
  size_t put = 0;
  while (put < n) {
    const ssize_t w = ::write(fd, static_cast<const uint8_t*>(buf) + put, n - put);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return false;
    if (w == 0) {
      errno = EIO;
      return false;
    }
    put += static_cast<size_t>(w);
  }
  return true;
}

}  // namespace ehprof
