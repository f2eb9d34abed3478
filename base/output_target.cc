#include "base/output_target.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/fd_streambuf.h"

namespace ehprof {
namespace {

std::string Errno() { return std::strerror(errno); }

bool Trusted(const struct stat& st) { return st.st_uid == 0 || st.st_uid == ::geteuid(); }

// Standard output, duplicated: written at its offset (a file opened with
// >> stays appended to).
absl::StatusOr<UniqueFd> Stdout(const std::string& path) {
  const int flags = ::fcntl(STDOUT_FILENO, F_GETFL);
  if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": standard output is not open for writing"));
  }
  UniqueFd fd(::fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3));
  if (!fd.valid()) return absl::ResourceExhaustedError(absl::StrCat(path, ": ", Errno()));
  return fd;
}

bool SameFile(const struct stat& a, int fd) {
  struct stat b;
  return ::fstat(fd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

// The object at path (a link followed: its owner was checked), opened
// without creating anything and without waiting on a FIFO.
absl::StatusOr<UniqueFd> OpenInPlace(const std::string& path, bool* regular) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_NOCTTY | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) {
    return absl::PermissionDeniedError(absl::StrCat(
        "cannot open ", path, ": ", errno == ENXIO ? "a pipe nobody reads" : Errno()));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return absl::PermissionDeniedError(absl::StrCat(path, ": ", Errno()));
  if (SameFile(st, STDOUT_FILENO)) return Stdout(path);
  *regular = S_ISREG(st.st_mode);
  if (!*regular && !S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode) && !S_ISSOCK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(path, ": not a regular file, pipe or character device: not written"));
  }
  if (!*regular && !Trusted(st)) {
    // Someone else's FIFO could stall the writer for ever.
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": a pipe or device owned by uid ", st.st_uid, ": not written"));
  }
  // Blocking writes from here: a slow reader of one's own pipe is waited for.
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

absl::StatusOr<OutputTarget> OutputTarget::Open(const std::string& path, mode_t mode) {
  if (path == "-") {
    absl::StatusOr<UniqueFd> fd = Stdout("standard output");
    if (!fd.ok()) return fd.status();
    return OutputTarget(path, mode, std::nullopt, *std::move(fd), false);
  }
  struct stat st;
  const bool exists = ::lstat(path.c_str(), &st) == 0;
  if (!exists && errno != ENOENT) return absl::PermissionDeniedError(absl::StrCat(path, ": ", Errno()));
  if (exists && S_ISREG(st.st_mode) && st.st_uid != ::geteuid() && ::geteuid() != 0) {
    // In a sticky directory (/tmp) only the file's owner, the directory's
    // or root may rename over it: said now rather than after sampling.
    const size_t slash = path.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
    struct stat d;
    if (::stat(dir.c_str(), &d) == 0 && (d.st_mode & S_ISVTX) && d.st_uid != ::geteuid()) {
      return absl::PermissionDeniedError(absl::StrCat(
          path, ": a file of uid ", st.st_uid, " in a sticky directory: it cannot be replaced; name another file"));
    }
  }
  if (!exists || S_ISREG(st.st_mode)) {
    absl::StatusOr<ExclusiveFile> file = ExclusiveFile::Create(absl::StrCat(path, ".tmp."));
    if (!file.ok()) {
      return absl::Status(file.status().code(), absl::StrCat("cannot write ", path, ": ", file.status().message()));
    }
    return OutputTarget(path, mode, *std::move(file), UniqueFd(), false);
  }
  if (S_ISLNK(st.st_mode) && !Trusted(st)) {
    return absl::PermissionDeniedError(absl::StrCat(
        path, ": a symbolic link owned by uid ", st.st_uid,
        ": not followed (ehprof writes through no other user's link); remove it or name another file"));
  }
  if (!S_ISLNK(st.st_mode) && !Trusted(st)) {
    // Not even opened: someone else's FIFO could stall the writer for ever.
    return absl::PermissionDeniedError(
        absl::StrCat(path, ": a pipe or device owned by uid ", st.st_uid, ": not written"));
  }
  bool regular = false;
  absl::StatusOr<UniqueFd> fd = OpenInPlace(path, &regular);
  if (!fd.ok()) return fd.status();
  return OutputTarget(path, mode, std::nullopt, *std::move(fd), regular);
}

OutputTarget::OutputTarget(std::string path, mode_t mode, std::optional<ExclusiveFile> file, UniqueFd fd,
                           bool truncate)
    : path_(std::move(path)), mode_(mode), file_(std::move(file)), fd_(std::move(fd)), truncate_(truncate) {
  if (!file_) {
    buf_ = std::make_unique<FdStreamBuf>(fd_.get());
    stream_ = std::make_unique<std::ostream>(buf_.get());
  }
}

OutputTarget::OutputTarget(OutputTarget&&) noexcept = default;
OutputTarget& OutputTarget::operator=(OutputTarget&&) noexcept = default;
OutputTarget::~OutputTarget() = default;

std::ostream& OutputTarget::stream() { return file_ ? file_->stream() : *stream_; }

absl::Status OutputTarget::Commit() {
  if (file_) {
    absl::Status s = file_->Commit(path_, mode_);
    if (s.ok() || absl::IsDataLoss(s)) return s;
    file_->Keep();
    return absl::Status(s.code(), absl::StrCat(s.message(), "; the output is in ", file_->path()));
  }
  stream_->flush();
  if (!*stream_) {
    return absl::DataLossError(absl::StrCat("writing ", path_, " failed: ", std::strerror(buf_->saved_errno())));
  }
  if (truncate_) {
    const off_t end = ::lseek(fd_.get(), 0, SEEK_CUR);
    if (end < 0 || ::ftruncate(fd_.get(), end) != 0) {
      return absl::DataLossError(absl::StrCat("cannot cut ", path_, " to what was written: ", Errno()));
    }
  }
  return absl::OkStatus();
}

absl::Status MakeOwnDirectory(const std::string& dir, const std::string& flag) {
  const std::string what = absl::StrCat(flag, " ", dir, ": ");
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return absl::PermissionDeniedError(what + Errno());
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) return absl::PermissionDeniedError(what + Errno());
  if (S_ISLNK(st.st_mode)) {
    if (!Trusted(st)) {
      return absl::PermissionDeniedError(
          absl::StrCat(what, "a symbolic link owned by uid ", st.st_uid, ": not followed"));
    }
    if (::stat(dir.c_str(), &st) != 0) return absl::PermissionDeniedError(what + Errno());
  }
  if (!S_ISDIR(st.st_mode)) return absl::FailedPreconditionError(what + "not a directory");
  if (!Trusted(st)) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, "a directory owned by uid ", st.st_uid,
        ", who could swap it for a link while files are written: name a directory of root's or your own"));
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return absl::PermissionDeniedError(what + Errno());
  return absl::OkStatus();
}

absl::StatusOr<UniqueFd> OpenLogFile(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
                     0600));
  if (!fd.valid()) {
    const std::string why = Errno();
    struct stat st;
    if (::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode)) {
      return absl::PermissionDeniedError(
          absl::StrCat("--log ", path, ": a symbolic link (of uid ", st.st_uid, "): not followed"));
    }
    return absl::PermissionDeniedError(absl::StrCat("--log ", path, ": ", why));
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return absl::PermissionDeniedError(absl::StrCat("--log ", path, ": ", Errno()));
  if (!S_ISREG(st.st_mode) || st.st_uid != ::geteuid() || st.st_nlink != 1) {
    return absl::PermissionDeniedError(absl::StrCat(
        "--log ", path, ": not a regular file of this user with one link (uid ", st.st_uid, ", ", st.st_nlink,
        " links): not written"));
  }
  return fd;
}

}  // namespace ehprof
