#include "agent/process/proc_maps.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "base/unique_fd.h"

namespace ehprof {
namespace {

constexpr std::string_view kDeletedSuffix = " (deleted)";
// Enough of a bad line to recognise it, not enough to flood a log.
constexpr size_t kMaxQuotedLine = 120;

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool ParseHex(std::string_view s, uint64_t max, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  for (char c : s) {
    int d = HexDigit(c);
    if (d < 0 || v > (max - d) / 16) return false;
    v = v * 16 + d;
  }
  *out = v;
  return true;
}

bool ParseDecimal(std::string_view s, uint64_t* out) {
  if (s.empty()) return false;
  uint64_t v = 0;
  constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    int d = c - '0';
    if (v > (kMax - d) / 10) return false;
    v = v * 10 + d;
  }
  *out = v;
  return true;
}

// Takes the text up to the next space and drops the spaces after it (the
// kernel pads before the path; be as lenient between the other fields).
std::string_view NextField(std::string_view* rest) {
  size_t space = rest->find(' ');
  std::string_view field = rest->substr(0, space);
  rest->remove_prefix(field.size());
  while (!rest->empty() && rest->front() == ' ') rest->remove_prefix(1);
  return field;
}

bool ParsePerms(std::string_view s, MapsEntry* e) {
  if (s.size() != 4) return false;
  auto flag = [](char c, char set, bool* out) {
    if (c != set && c != '-') return false;
    *out = c == set;
    return true;
  };
  if (!flag(s[0], 'r', &e->read) || !flag(s[1], 'w', &e->write) ||
      !flag(s[2], 'x', &e->exec)) {
    return false;
  }
  if (s[3] != 'p' && s[3] != 's') return false;
  e->priv = s[3] == 'p';
  return true;
}

// Returns the reason the line is malformed, or nullptr.
const char* ParseLine(std::string_view line, MapsEntry* e) {
  constexpr uint64_t kMax64 = std::numeric_limits<uint64_t>::max();
  constexpr uint64_t kMax32 = std::numeric_limits<uint32_t>::max();
  std::string_view rest = line;
  std::string_view range = NextField(&rest);
  size_t dash = range.find('-');
  if (dash == std::string_view::npos) return "address range has no '-'";
  if (!ParseHex(range.substr(0, dash), kMax64, &e->start) ||
      !ParseHex(range.substr(dash + 1), kMax64, &e->end)) {
    return "bad hex address";
  }
  if (e->end <= e->start) return "range ends before it starts";
  if (!ParsePerms(NextField(&rest), e)) return "bad permissions (want [r-][w-][x-][ps])";
  if (!ParseHex(NextField(&rest), kMax64, &e->offset)) return "bad hex offset";
  std::string_view dev = NextField(&rest);
  size_t colon = dev.find(':');
  uint64_t major = 0, minor = 0;
  if (colon == std::string_view::npos || !ParseHex(dev.substr(0, colon), kMax32, &major) ||
      !ParseHex(dev.substr(colon + 1), kMax32, &minor)) {
    return "bad device (want hex MAJOR:MINOR)";
  }
  e->dev_major = static_cast<uint32_t>(major);
  e->dev_minor = static_cast<uint32_t>(minor);
  if (!ParseDecimal(NextField(&rest), &e->inode)) return "bad inode";
  // Whatever remains is the path, spaces and all.
  if (rest.size() >= kDeletedSuffix.size() &&
      rest.substr(rest.size() - kDeletedSuffix.size()) == kDeletedSuffix) {
    e->deleted = true;
    rest.remove_suffix(kDeletedSuffix.size());
  }
  e->path = std::string(rest);
  return nullptr;
}

std::string Quote(std::string_view line) {
  bool cut = line.size() > kMaxQuotedLine;
  std::string_view shown = line.substr(0, kMaxQuotedLine);
  return absl::StrCat("'", absl::CEscape(absl::string_view(shown.data(), shown.size())),
                      cut ? "...'" : "'");
}

absl::Status ErrnoError(const std::string& path, const char* what, int err) {
  std::string msg = absl::StrCat(path, ": ", what, ": ", std::string(std::strerror(err)));
  switch (err) {
    case ENOENT:
    case ESRCH:
      return absl::NotFoundError(absl::StrCat(msg, " (the process has exited)"));
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(msg);
    default:
      return absl::InternalError(msg);
  }
}

}  // namespace

absl::StatusOr<std::vector<MapsEntry>> ParseProcMaps(std::string_view text,
                                                     const std::string& source_name) {
  std::vector<MapsEntry> entries;
  size_t line_number = 0;
  while (!text.empty()) {
    ++line_number;
    size_t newline = text.find('\n');
    std::string_view line = text.substr(0, newline);
    text.remove_prefix(newline == std::string_view::npos ? text.size() : newline + 1);
    MapsEntry e;
    const char* reason = line.empty() ? "empty line" : ParseLine(line, &e);
    if (reason != nullptr) {
      return absl::InvalidArgumentError(absl::StrCat(
          source_name, ":", line_number, ": ", reason, ": ", Quote(line)));
    }
    entries.push_back(std::move(e));
  }
  return entries;
}

namespace {
thread_local SharedProcMaps* innermost_shared = nullptr;
absl::StatusOr<std::vector<MapsEntry>> ReadProcMapsNow(int pid);
}  // namespace

SharedProcMaps::SharedProcMaps(int pid) : pid_(pid), outer_(innermost_shared) { innermost_shared = this; }

SharedProcMaps::~SharedProcMaps() { innermost_shared = outer_; }

absl::StatusOr<std::vector<MapsEntry>> ReadProcMaps(int pid) {
  SharedProcMaps* scope = innermost_shared;
  while (scope && scope->pid_ != pid) scope = scope->outer_;
  if (!scope) return ReadProcMapsNow(pid);
  if (!scope->read_) {
    scope->read_ = ReadProcMapsNow(pid);
    ++scope->reads_;
  }
  return *scope->read_;
}

namespace {

absl::StatusOr<std::vector<MapsEntry>> ReadProcMapsNow(int pid) {
  const std::string path = absl::StrCat("/proc/", pid, "/maps");
  if (pid <= 0) return absl::InvalidArgumentError(absl::StrCat(path, ": bad pid"));
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return ErrnoError(path, "cannot open", errno);
  // The kernel hands out about a page per read(), taking the mmap lock anew
  // each time, so a racing mmap/munmap can make the text repeat or skip a
  // range; the entries are as consistent as that.
  std::string text;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ErrnoError(path, "read failed", errno);
    if (n == 0) break;
    text.append(buf, static_cast<size_t>(n));
  }
  // A process that exits after the open reads as empty, like a kernel thread;
  // only the former has lost its /proc directory.
  if (text.empty()) {
    struct stat st;
    const std::string dir = absl::StrCat("/proc/", pid);
    if (::stat(dir.c_str(), &st) != 0 && errno == ENOENT) {
      return ErrnoError(path, "read", ENOENT);
    }
  }
  return ParseProcMaps(text, path);
}

}  // namespace

char ProcState(uint32_t pid) {
  char buf[512];
  const int fd = ::open(absl::StrCat("/proc/", pid, "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  const ssize_t n = ::read(fd, buf, sizeof(buf) - 1);
  ::close(fd);
  if (n <= 0) return 0;
  buf[n] = 0;
  const char* paren = std::strrchr(buf, ')');  // comm may hold spaces and parens
  return paren && paren[1] == ' ' ? paren[2] : 0;
}

}  // namespace ehprof
