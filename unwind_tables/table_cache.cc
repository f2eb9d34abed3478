#include "unwind_tables/table_cache.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "base/fd_io.h"
#include "base/scoped_handle.h"
#include "base/unique_fd.h"

namespace ehprof {
namespace {

constexpr char kSuffix[] = ".ehpt";
// Bigger entries are not read: a legitimate table is at most ~50 MB
// (kMaxTableRows rows at 3 bytes plus pages).
constexpr uint64_t kMaxEntryBytes = uint64_t{512} << 20;

std::string Errno() { return std::strerror(errno); }

// A file or directory this user owns and no one else may write.
bool OwnedAndPrivate(const struct stat& st) {
  return st.st_uid == geteuid() && (st.st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

absl::Status MakeDirs(const std::string& dir) {
  for (size_t at = dir.find('/', 1);; at = dir.find('/', at + 1)) {
    const std::string prefix = dir.substr(0, at);
    if (::mkdir(prefix.c_str(), 0700) != 0 && errno != EEXIST) {
      return absl::PermissionDeniedError(
          absl::StrCat("table cache: cannot create ", prefix, ": ", Errno()));
    }
    if (at == std::string::npos) return absl::OkStatus();
  }
}

}  // namespace

std::optional<std::string> ServiceTableCacheDir() {
  const char* env = std::getenv("CACHE_DIRECTORY");
  if (env == nullptr || env[0] != '/') return std::nullopt;
  const std::string all(env);
  return all.substr(0, all.find(':')) + "/tables";
}

absl::StatusOr<TableCache> TableCache::Open(std::string dir, uint64_t max_bytes) {
  if (dir.empty() || dir[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat("table cache: ", dir, ": not an absolute path"));
  }
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (absl::Status s = MakeDirs(dir); !s.ok()) return s;
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("table cache: ", dir, ": ", Errno()));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("table cache: ", dir, " is not a directory"));
  }
  if (!OwnedAndPrivate(st)) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "table cache: %s is owned by uid %d or writable by others (mode %o): not used", dir,
        st.st_uid, st.st_mode & 07777));
  }
  return TableCache(std::move(dir), max_bytes);
}

std::string TableCache::PathOf(const TableFileKey& key) const {
  return absl::StrFormat("%s/%s-%x-%x-%x-f%08x%s", dir_, key.build_id.empty() ? "none" : key.build_id,
                         key.inode, key.size, static_cast<uint64_t>(key.mtime_ns), TableFormatTag(),
                         kSuffix);
}

std::optional<StoredTable> TableCache::Load(const TableFileKey& key, std::string* why) {
  const std::string path = PathOf(key);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  if (!fd.valid() && errno == ENOENT) {
    ++stats_.misses;
    return std::nullopt;
  }
  auto refuse = [&](std::string reason) -> std::optional<StoredTable> {
    ++stats_.rejected;
    ::unlink(path.c_str());
    if (why) *why = std::move(reason);
    return std::nullopt;
  };
  if (!fd.valid()) return refuse(absl::StrCat(path, ": ", Errno()));
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || !OwnedAndPrivate(st) ||
      (st.st_mode & (S_IRGRP | S_IROTH)) != 0) {
    return refuse(absl::StrCat(path, ": not a private regular file of this user"));
  }
  if (static_cast<uint64_t>(st.st_size) > kMaxEntryBytes) return refuse(absl::StrCat(path, ": too big"));
  std::vector<uint8_t> bytes(static_cast<size_t>(st.st_size));
  if (ReadFull(fd.get(), bytes.data(), bytes.size()) != static_cast<ssize_t>(bytes.size())) {
    return refuse(absl::StrCat(path, ": short read"));
  }
  absl::StatusOr<StoredTable> t = ParseTable(bytes, key, path);
  if (!t.ok()) return refuse(std::string(t.status().message()));
  ::futimens(fd.get(), nullptr);  // recently used: the last to be trimmed
  ++stats_.hits;
  return *std::move(t);
}

absl::Status TableCache::Store(const TableFileKey& key, const StoredTable& table) {
  const std::string path = PathOf(key);
  std::string tmp = absl::StrCat(dir_, "/.tmp-XXXXXX");
  UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
  if (!fd.valid()) {
    return absl::PermissionDeniedError(absl::StrCat("table cache: cannot write in ", dir_, ": ", Errno()));
  }
  const std::string bytes = SerializeTable(key, table);
  if (::fchmod(fd.get(), 0600) != 0 || !WriteFull(fd.get(), bytes.data(), bytes.size()) || ::fsync(fd.get()) != 0 ||
      ::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = Errno();
    ::unlink(tmp.c_str());
    return absl::InternalError(absl::StrCat("table cache: writing ", path, ": ", err));
  }
  ++stats_.stored;
  known_bytes_ += bytes.size();
  ++known_entries_;
  Trim();
  return absl::OkStatus();
}

void TableCache::Trim() {
  if (listed_ && known_bytes_ <= max_bytes_ && known_entries_ <= kMaxEntries) return;
  struct Entry {
    std::string path;
    uint64_t bytes;
    timespec mtime;
  };
  std::vector<Entry> entries;
  uint64_t total = 0;
  ScopedHandle<DIR, closedir> d(::opendir(dir_.c_str()));
  if (!d) return;
  while (dirent* e = ::readdir(d.get())) {
    if (!absl::EndsWith(e->d_name, kSuffix)) continue;
    std::string p = absl::StrCat(dir_, "/", e->d_name);
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    entries.push_back({std::move(p), static_cast<uint64_t>(st.st_size), st.st_mtim});
    total += static_cast<uint64_t>(st.st_size);
  }
  d.reset();
  listed_ = true;
  known_bytes_ = total;
  known_entries_ = entries.size();
  if (total <= max_bytes_ && entries.size() <= kMaxEntries) return;
  // Down to nine tenths: the next listing is a tenth of the budget away.
  const uint64_t target = max_bytes_ - max_bytes_ / 10;
  const uint64_t target_entries = kMaxEntries - kMaxEntries / 10;
  uint64_t left = entries.size();
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return a.mtime.tv_sec != b.mtime.tv_sec ? a.mtime.tv_sec < b.mtime.tv_sec
                                            : a.mtime.tv_nsec < b.mtime.tv_nsec;
  });
  for (const Entry& e : entries) {
    if (total <= target && left <= target_entries) break;
    if (::unlink(e.path.c_str()) == 0) {
      total -= e.bytes;
      --left;
      ++stats_.evicted;
    }
  }
  known_bytes_ = total;
  known_entries_ = left;
}

}  // namespace ehprof
