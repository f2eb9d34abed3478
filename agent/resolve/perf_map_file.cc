#include "agent/resolve/perf_map_file.h"

#include <fcntl.h>
#include <unistd.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "base/fd_io.h"

namespace ehprof {
namespace {

// Not through a link, nor blocking on a FIFO: the file is a user's.
constexpr int kFileFlags = O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK;

}  // namespace

std::optional<uint32_t> InnermostPid(uint32_t pid) {
  UniqueFd fd(::open(absl::StrCat("/proc/", pid, "/status").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return std::nullopt;
  // NStgid comes within the first 1 KiB; the whole file is a few KiB.
  std::string text(8192, '\0');
  const ssize_t got = ReadFull(fd.get(), text.data(), text.size());
  if (got <= 0) return std::nullopt;
  text.resize(static_cast<size_t>(got));
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "NStgid:")) continue;
    absl::string_view last;
    for (absl::string_view field : absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty())) last = field;
    uint32_t ns_pid = 0;
    if (absl::SimpleAtoi(last, &ns_pid) && ns_pid > 0) return ns_pid;
    return pid;
  }
  return pid;  // a kernel before 4.1: no pid namespaces shown
}

PerfMapFile OpenPerfMap(uint32_t pid, const std::string& dir) {
  PerfMapFile f;
  if (!dir.empty()) {
    f.name = absl::StrCat(dir, "/perf-", pid, ".map");
    f.fd.reset(::open(f.name.c_str(), kFileFlags));
    return f;
  }
  const std::optional<uint32_t> ns_pid = InnermostPid(pid);
  if (!ns_pid) {
    // The process is gone (`record` names its JIT code after it exited):
    // its root with it, so the map is looked for in ehprof's own /tmp, as
    // a process that shared it left it. The caller's owner rule still
    // holds: with /proc/PID gone, only root's or ehprof's user's map is read.
    f.name = absl::StrCat("/tmp/perf-", pid, ".map");
    f.fd.reset(::open(f.name.c_str(), kFileFlags));
    return f;
  }
  const std::string file = absl::StrCat("perf-", *ns_pid, ".map");
  f.name = absl::StrCat("/tmp/", file);
  // The process's root (a magic link: followed), then its tmp and the map,
  // neither followed if a link.
  UniqueFd root(::open(absl::StrCat("/proc/", pid, "/root").c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root.valid()) return f;
  UniqueFd tmp(::openat(root.get(), "tmp", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!tmp.valid()) return f;
  f.fd.reset(::openat(tmp.get(), file.c_str(), kFileFlags));
  return f;
}

}  // namespace ehprof
