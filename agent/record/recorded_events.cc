#include "agent/record/recorded_events.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/fd_io.h"

namespace ehprof {
namespace {

// Larger than any record the BPF side sends (a VERIFY event: 64 KiB of
// stack and its header): a length past it is a broken file.
constexpr uint32_t kMaxEventBytes = 1 << 20;

// Reads exactly n bytes; 0 at a clean end before any, -1 on an error or a
// short read (errno set, EIO for a short read).
int ReadAll(int fd, void* buf, size_t n) {
  const ssize_t got = ReadFull(fd, buf, n);
  if (got < 0) return -1;
  if (got == 0 && n > 0) return 0;
  if (static_cast<size_t>(got) < n) {
    errno = EIO;
    return -1;
  }
  return 1;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RecordedEventSource>> RecordedEventSource::Open(const std::string& path,
                                                                               Handler handler, size_t per_poll) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  return std::unique_ptr<RecordedEventSource>(
      new RecordedEventSource(std::move(fd), std::move(handler), per_poll == 0 ? 1 : per_poll, path));
}

bool RecordedEventSource::Next() {
  if (done_) return false;
  uint32_t len = 0;
  int r = ReadAll(fd_.get(), &len, sizeof(len));
  if (r == 1 && len > kMaxEventBytes) {
    status_ = absl::DataLossError(absl::StrCat(path_, ": an event of ", len, " bytes (at most ", kMaxEventBytes,
                                               "): not a file of events"));
    done_ = true;
    return false;
  }
  std::vector<uint8_t> buf(len);
  if (r == 1) r = len == 0 ? 1 : ReadAll(fd_.get(), buf.data(), len);
  if (r != 1) {
    if (r < 0) status_ = absl::DataLossError(absl::StrCat(path_, ": a truncated event: ", std::strerror(errno)));
    done_ = true;
    return false;
  }
  handler_(buf.data(), buf.size());
  return true;
}

int RecordedEventSource::Poll(int timeout_ms) {
  (void)timeout_ms;  // what is in the file has arrived
  int n = 0;
  while (static_cast<size_t>(n) < per_poll_ && Next()) ++n;
  return n;
}

void RecordedEventSource::Drain() {
  while (Next()) {
  }
}

absl::StatusOr<EventFileWriter> EventFileWriter::Create(const std::string& path) {
  // Never through a link (the file is 0600 when made).
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
  if (fd.get() < 0) return absl::PermissionDeniedError(absl::StrCat(path, ": ", std::strerror(errno)));
  return EventFileWriter(std::move(fd), path);
}

absl::Status EventFileWriter::Write(const void* data, size_t size) {
  if (size > kMaxEventBytes) return absl::InvalidArgumentError(absl::StrCat(path_, ": an event of ", size, " bytes"));
  const uint32_t len = static_cast<uint32_t>(size);
  for (const auto& [p, n] : {std::pair<const void*, size_t>{&len, sizeof(len)}, {data, size}}) {
    if (!WriteFull(fd_.get(), p, n)) return absl::DataLossError(absl::StrCat(path_, ": ", std::strerror(errno)));
  }
  return absl::OkStatus();
}

}  // namespace ehprof
