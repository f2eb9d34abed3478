#include "agent/resolve/frame_locator.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/resolve/perf_map_file.h"
#include "base/fd_io.h"

namespace ehprof {
namespace {

constexpr char kUnknown[] = "[unknown]";
// A runaway JIT log stays bounded: bytes of one file read at all.
constexpr uint64_t kMaxFileBytes = 256u << 20;
// Read at once; a line longer than this is skipped.
constexpr uint64_t kChunkBytes = 1u << 20;
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

JitSymbols::JitSymbols(Options options, Warnings* warnings)
    : options_(std::move(options)), warnings_(warnings) {}

ResolvedFrame JitSymbols::Frame(uint32_t pid, uint64_t site, bool anon) {
  ResolvedFrame f;
  f.addr = site;
  f.dso = kUnknown;
  f.symbol = kUnknown;
  const Cached& c = MapOf(pid);
  if (auto name = c.map.Find(site)) {
    f.symbol = std::move(*name);
    f.dso = c.name;
    f.jit = true;
  } else if (anon) {
    f.dso = "[anon]";
  }
  return f;
}

const JitSymbols::Cached& JitSymbols::MapOf(uint32_t pid) {
  Cached& c = maps_[pid];
  c.used = ++clock_;
  if (c.checked_round != round_) {
    c.checked_round = round_;
    Refresh(pid, &c);
    if (OverBounds() || maps_.size() > kMaxProcesses) Evict(pid);
  }
  return maps_[pid];
}

bool JitSymbols::OverBounds() const { return entries_ > options_.max_entries || bytes_ > options_.max_bytes; }

void JitSymbols::Refresh(uint32_t pid, Cached* c) {
  PerfMapFile file = OpenPerfMap(pid, options_.dir);
  struct stat st;
  if (!file.fd.valid() || ::fstat(file.fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return;  // none (yet)
  // Anyone can write /tmp/perf-PID.map for another user's pid, before or
  // while it runs: a map names the process's code only when its owner is
  // root, the user running ehprof (perf's rule) or the process's own user
  // (the owner of /proc/PID), who could name that code anyway.
  if (st.st_uid != 0 && st.st_uid != ::geteuid()) {
    struct stat proc;
    if (::stat(absl::StrCat("/proc/", pid).c_str(), &proc) != 0 || proc.st_uid != st.st_uid) {
      warnings_->AddOnce(file.name, absl::StrCat(file.name, ": owned by uid ", st.st_uid, ", neither root nor pid ",
                                                pid, "'s user: not read"));
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
    bytes_ -= c->map.bytes();
    c->map = PerfMap();
    c->parsed = 0;
    c->in_long_line = false;
    c->long_lines = 0;
  }
  c->dev = st.st_dev;
  c->ino = st.st_ino;
  c->size = size;
  c->mtime_ns = mtime_ns;
  c->name = std::move(file.name);
  ReadLines(file.fd.get(), std::min(size, kMaxFileBytes), c);
  if (c->map.bad_lines() + c->long_lines > 0) {
    warnings_->AddOnce(c->name, absl::StrCat(c->name, " (pid ", pid, "): ", c->map.bad_lines() + c->long_lines,
                                            " malformed or overlong lines skipped"));
  }
}

void JitSymbols::ReadLines(int fd, uint64_t until, Cached* c) {
  // One process's map alone past a bound: what it holds stays.
  while (c->parsed < until && c->map.size() < options_.max_entries && c->map.bytes() < options_.max_bytes) {
    std::string text = ReadAt(fd, c->parsed, std::min(until - c->parsed, kChunkBytes));
    if (text.empty()) return;  // read error
    size_t from = 0;
    if (c->in_long_line) {
      const size_t nl = text.find('\n');
      c->parsed += nl == std::string::npos ? text.size() : nl + 1;
      if (nl == std::string::npos) continue;
      c->in_long_line = false;
      from = nl + 1;
    }
    const size_t whole = text.rfind('\n');
    if (whole == std::string::npos || whole < from) {
      // No whole line yet; a full chunk of one line is too long to be a name.
      if (text.size() - from < kChunkBytes) return;
      ++c->long_lines;
      c->in_long_line = true;
      c->parsed += text.size() - from;
      continue;
    }
    const size_t before_entries = c->map.size(), before_bytes = c->map.bytes();
    c->parsed += c->map.Append(std::string_view(text).substr(from, whole + 1 - from), options_.max_entries,
                               options_.max_bytes);
    entries_ += c->map.size() - before_entries;
    bytes_ += c->map.bytes() - before_bytes;
  }
}

void JitSymbols::Evict(uint32_t keep) {
  while (OverBounds() || maps_.size() > kMaxProcesses) {
    auto oldest = maps_.end();
    for (auto it = maps_.begin(); it != maps_.end(); ++it) {
      if (it->first != keep && (oldest == maps_.end() || it->second.used < oldest->second.used)) oldest = it;
    }
    if (oldest == maps_.end()) return;  // only `keep` is left
    entries_ -= oldest->second.map.size();
    bytes_ -= oldest->second.map.bytes();
    maps_.erase(oldest);
  }
}

}  // namespace ehprof
