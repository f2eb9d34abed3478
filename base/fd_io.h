// Whole reads and writes on a file descriptor: read(2) and write(2) may
// move fewer bytes than asked (pipes, signals, large files), so every
// caller that needs all of them loops; these are that loop, once.
#ifndef EHPROF_BASE_FD_IO_H_
#define EHPROF_BASE_FD_IO_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace ehprof {

// Reads until n bytes or the end of the file, retrying EINTR: the bytes
// read (fewer than n only at the end), or -1 on an error (errno set).
ssize_t ReadFull(int fd, void* buf, size_t n);

// As ReadFull, from `offset` (pread: the file position is not moved).
ssize_t PreadFull(int fd, void* buf, size_t n, uint64_t offset);

// Writes all n bytes, retrying EINTR: false on an error (errno set; EIO
// when write(2) wrote nothing without one).
bool WriteFull(int fd, const void* buf, size_t n);

}  // namespace ehprof

#endif  // EHPROF_BASE_FD_IO_H_
