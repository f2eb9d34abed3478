#include "agent/sampling/cgroup_filter.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace ehprof {

std::string Cgroup2Mount(const std::string& mounts) {
  std::istringstream in(mounts);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    if (f.size() >= 3 && f[2] == "cgroup2") return f[1];
  }
  return "";
}

absl::StatusOr<CgroupTarget> ResolveCgroup(const std::string& path) {
  std::ifstream in("/proc/self/mounts");
  std::stringstream text;
  text << in.rdbuf();
  const std::string mount = Cgroup2Mount(text.str());
  if (mount.empty()) return absl::FailedPreconditionError("--cgroup: no cgroup2 hierarchy is mounted");
  std::string rel = path;
  if (absl::StartsWith(rel, mount + "/") || rel == mount) {
    rel = rel.substr(mount.size());
  } else if (!rel.empty() && rel[0] == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("--cgroup ", path, ": not under the cgroup2 mount ", mount));
  }
  CgroupTarget t;
  t.path = mount;
  for (absl::string_view part : absl::StrSplit(rel, '/', absl::SkipEmpty())) {
    if (part == "." || part == "..") {
      return absl::InvalidArgumentError(absl::StrCat("--cgroup ", path, ": no . or .. components"));
    }
    absl::StrAppend(&t.path, "/", part);
    ++t.level;
  }
  struct stat st;
  if (::stat(t.path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::NotFoundError(absl::StrCat("--cgroup ", path, ": no cgroup ", t.path,
                                            errno ? absl::StrCat(" (", std::strerror(errno), ")") : ""));
  }
  t.id = st.st_ino;
  return t;
}

}  // namespace ehprof
