#include "agent/record/exec_hints.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "base/unique_fd.h"

namespace ehprof {
namespace {

constexpr char kHeader[] = "ehprof exec hints 1";
constexpr size_t kMaxFileBytes = 64 * 4096;

// One file per command, named by a hash of its path (FNV-1a: stable across
// builds, unlike std::hash).
std::string HintPath(const std::string& dir, const std::string& command_exe) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : command_exe) h = (h ^ c) * 1099511628211ull;
  return absl::StrFormat("%s/exec-hints-%016x", dir, h);
}

}  // namespace

std::vector<std::string> ReadExecHints(const std::string& cache_dir, const std::string& command_exe) {
  std::vector<std::string> out;
  UniqueFd fd(::open(HintPath(cache_dir, command_exe).c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  struct stat st;
  // Only a regular file of ours, private: the paths it names get opened.
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_uid != ::geteuid() || (st.st_mode & 077) != 0) {
    return out;
  }
  std::string text(kMaxFileBytes, '\0');
  const ssize_t n = ::read(fd.get(), text.data(), text.size());
  if (n <= 0) return out;
  text.resize(static_cast<size_t>(n));
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  if (lines.empty() || lines[0] != kHeader) return out;
  for (size_t i = 1; i < lines.size() && out.size() < kMaxExecHints; ++i) {
    if (lines[i].size() > 1 && lines[i][0] == '/' && lines[i] != command_exe) out.push_back(lines[i]);
  }
  return out;
}

absl::Status WriteExecHints(const std::string& cache_dir, const std::string& command_exe,
                            const std::set<std::string>& exes) {
  const std::string path = HintPath(cache_dir, command_exe);
  const std::string tmp = absl::StrCat(path, ".tmp.", ::getpid());
  std::string text = absl::StrCat(kHeader, "\n");
  size_t n = 0;
  for (const std::string& e : exes) {
    if (e.empty() || e[0] != '/' || e.find('\n') != std::string::npos) continue;
    if (n++ == kMaxExecHints) break;
    absl::StrAppend(&text, e, "\n");
  }
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.valid()) return absl::InternalError(absl::StrCat(tmp, ": ", std::strerror(errno)));
  const bool wrote = ::write(fd.get(), text.data(), text.size()) == static_cast<ssize_t>(text.size());
  fd.reset();
  if (!wrote || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat(path, ": ", std::strerror(err)));
  }
  return absl::OkStatus();
}

}  // namespace ehprof
