#include "agent/resolve/frame_locator.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/fd_io.h"
#include "base/unique_fd.h"

namespace ehprof {
namespace {

constexpr char kUnknown[] = "[unknown]";
// A runaway JIT log stays bounded.
constexpr uint64_t kMaxFileBytes = 256u << 20;
// Processes whose maps (or that they have none) are kept at once.
constexpr size_t kMaxProcesses = 4096;

// Up to `len` bytes of fd from `offset` (fewer at its end, none on an error).
std::string ReadAt(int fd, uint64_t offset, uint64_t len) {
  std::string text(len, '\0');
  const ssize_t got = PreadFull(fd, text.data(), text.size(), offset);
  text.resize(got < 0 ? 0 : static_cast<size_t>(got));
  return text;
}

}  // namespace

FrameLocation LocateSite(const ProcessTracker& tracker, uint32_t pid, uint64_t time_ns, uint64_t site) {
  FrameLocation l;
  l.site = site;
  const auto r = tracker.Resolve(pid, time_ns, site);
  if (!r) return l;
  l.mapping = r->mapping;
  if (r->mapping->path == "//anon") {
    l.kind = FrameLocation::Kind::kAnon;
    return l;
  }
  l.kind = FrameLocation::Kind::kFile;
  l.elf_vaddr = r->elf_vaddr;
  return l;
}

JitSymbols::JitSymbols(Options options) : options_(std::move(options)) {}

std::string JitSymbols::PathOf(uint32_t pid) const { return absl::StrCat(options_.dir, "/perf-", pid, ".map"); }

ResolvedFrame JitSymbols::Frame(uint32_t pid, uint64_t site, bool anon) {
  ResolvedFrame f;
  f.addr = site;
  f.dso = kUnknown;
  f.symbol = kUnknown;
  if (auto name = MapOf(pid).Find(site)) {
    f.symbol = std::move(*name);
    f.dso = PathOf(pid);
    f.jit = true;
  } else if (anon) {
    f.dso = "[anon]";
  }
  return f;
}

const PerfMap& JitSymbols::MapOf(uint32_t pid) {
  Cached& c = maps_[pid];
  c.used = ++clock_;
  if (c.checked_round != round_) {
    c.checked_round = round_;
    Refresh(pid, &c);
    if (entries_ > options_.max_entries || maps_.size() > kMaxProcesses) Evict(pid);
  }
  return maps_[pid].map;
}

void JitSymbols::Refresh(uint32_t pid, Cached* c) {
  const std::string path = PathOf(pid);
  // Not through a link, nor blocking on a FIFO: /tmp is anyone's.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  struct stat st;
  if (!fd.valid() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // none (yet)
  // Anyone can write /tmp/perf-PID.map for another user's pid, before or
  // while it runs: a map names the process's code only when its owner is
  // root, the user running ehprof (perf's rule) or the process's own user
  // (the owner of /proc/PID), who could name that code anyway.
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    struct stat proc;
    if (::stat(absl::StrCat("/proc/", pid).c_str(), &proc) != 0 || proc.st_uid != st.st_uid) {
      warnings_.AddOnce(path, absl::StrCat(path, ": owned by uid ", st.st_uid,
                                           ", neither root nor the process's user: not read"));
      return;
    }
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  const int64_t mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  const bool same_file = c->ino == st.st_ino && c->dev == st.st_dev;
  if (same_file && size == c->size && mtime_ns == c->mtime_ns) return;
  // Replaced, or rewritten rather than appended to: read anew.
  if (!same_file || size < c->size || (size == c->size && mtime_ns != c->mtime_ns)) {
    entries_ -= c->map.size();
    c->map = PerfMap();
    c->parsed = 0;
  }
  c->dev = st.st_dev;
  c->ino = st.st_ino;
  c->size = size;
  c->mtime_ns = mtime_ns;
  const uint64_t until = std::min(size, kMaxFileBytes);
  // One process's map alone past the bound: what it holds stays.
  if (until <= c->parsed || c->map.size() >= options_.max_entries) return;
  std::string text = ReadAt(fd.get(), c->parsed, until - c->parsed);
  const size_t whole = text.rfind('\n');
  if (whole == std::string::npos) return;  // no whole line yet
  text.resize(whole + 1);
  c->parsed += text.size();
  const size_t before = c->map.size();
  c->map.Append(text);
  entries_ += c->map.size() - before;
  if (c->map.bad_lines() > 0) {
    warnings_.AddOnce(path, absl::StrCat(path, ": ", c->map.bad_lines(), " malformed lines skipped"));
  }
}

void JitSymbols::Evict(uint32_t keep) {
  while (entries_ > options_.max_entries || maps_.size() > kMaxProcesses) {
    auto oldest = maps_.end();
    for (auto it = maps_.begin(); it != maps_.end(); ++it) {
      if (it->first != keep && (oldest == maps_.end() || it->second.used < oldest->second.used)) oldest = it;
    }
    if (oldest == maps_.end()) return;  // only `keep` is left
    entries_ -= oldest->second.map.size();
    maps_.erase(oldest);
  }
}

}  // namespace ehprof
