#include "agent/process/resolve_in_root.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <deque>
#include <vector>

#include "absl/strings/str_split.h"

namespace ehprof {
namespace {

constexpr int kMaxLinks = 40;  // the kernel's MAXSYMLINKS

// `path`'s components, in order, in front of what is left of `rest`.
void Prepend(const std::string& path, std::deque<std::string>* rest) {
  std::vector<std::string> parts = absl::StrSplit(path, '/', absl::SkipEmpty());
  rest->insert(rest->begin(), parts.begin(), parts.end());
}

UniqueFd Fail(int err) {
  errno = err;
  return UniqueFd();
}

}  // namespace

UniqueFd ResolveInRoot(int root, const std::string& path) {
  std::vector<UniqueFd> walked;  // the directories below root, in order
  const auto here = [&] { return walked.empty() ? root : walked.back().get(); };
  std::deque<std::string> rest;
  Prepend(path, &rest);
  int links = 0;
  while (!rest.empty()) {
    const std::string name = std::move(rest.front());
    rest.pop_front();
    if (name == ".") continue;
    if (name == "..") {
      if (!walked.empty()) walked.pop_back();
      continue;
    }
    UniqueFd fd(::openat(here(), name.c_str(), O_PATH | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return UniqueFd();
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) return UniqueFd();
    if (S_ISLNK(st.st_mode)) {
      struct statfs fs;
      if (++links > kMaxLinks || ::fstatfs(fd.get(), &fs) != 0 || fs.f_type == PROC_SUPER_MAGIC) {
        return Fail(ELOOP);
      }
      char target[PATH_MAX];
      const ssize_t n = ::readlinkat(fd.get(), "", target, sizeof(target));
      if (n <= 0 || static_cast<size_t>(n) >= sizeof(target)) return Fail(n < 0 ? errno : ENAMETOOLONG);
      const std::string link(target, static_cast<size_t>(n));
      if (link[0] == '/') walked.clear();
      Prepend(link, &rest);
      continue;
    }
    if (rest.empty()) return fd;
    if (!S_ISDIR(st.st_mode)) return Fail(ENOTDIR);
    walked.push_back(std::move(fd));
  }
  // The path named a directory (or the root itself).
  return UniqueFd(::openat(here(), ".", O_PATH | O_CLOEXEC));
}

}  // namespace ehprof
