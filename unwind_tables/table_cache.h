// A persistent cache of built compact tables, so a binary's table is ready
// at its next start instead of after a build (cc1plus: 517k rows, ~100 ms
// of lost samples at every g++ run). Entries feed a BPF program, so none is
// trusted blindly: the directory must be a real directory owned by this
// user and writable by no one else, each entry a regular 0600 file owned by
// this user, written for the same file (build-id, inode, size, mtime), by
// this builder version and ABI, intact (CRC-32) and structurally valid. An
// entry failing any of that is removed and the table rebuilt. The cache is
// bounded: the least recently used entries go when a store passes the
// budget or kMaxEntries entries, down to nine tenths of either. The
// directory is listed only then (and at the first store): a run that stores
// a table per distinct binary (100,000 of them) must not list every entry
// at each store, nor leave an entry (an inode, a block) for each.
#ifndef EHPROF_UNWIND_TABLES_TABLE_CACHE_H_
#define EHPROF_UNWIND_TABLES_TABLE_CACHE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "unwind_tables/table_file.h"

namespace ehprof {

inline constexpr char kDefaultTableCacheDir[] = "/var/cache/ehprof/tables";

// The cache directory a service manager gave ehprof: $CACHE_DIRECTORY/tables
// (systemd's CacheDirectory=; the first when it names several), nullopt
// when it is unset or not an absolute path.
std::optional<std::string> ServiceTableCacheDir();

class TableCache {
 public:
  // Entries kept at most, however small: a host's binaries and libraries
  // that run again are far fewer.
  static constexpr uint64_t kMaxEntries = 16384;

  struct Stats {
    uint64_t hits = 0;
    uint64_t misses = 0;
    uint64_t rejected = 0;  // present but refused (and removed)
    uint64_t stored = 0;
    uint64_t evicted = 0;
  };

  // Creates `dir` (mode 0700) if missing; an error when it exists but is
  // not a directory, is a symlink, is owned by another user or is group- or
  // world-writable. max_bytes bounds the entries' total size.
  static absl::StatusOr<TableCache> Open(std::string dir, uint64_t max_bytes);

  // The cached table for key; nullopt when there is none. A refused entry
  // is counted, removed, and reported in `why` (if given) with its reason.
  std::optional<StoredTable> Load(const TableFileKey& key, std::string* why = nullptr);
  // Writes the entry atomically (a temporary file renamed into place), then
  // trims the cache to its budget.
  absl::Status Store(const TableFileKey& key, const StoredTable& table);

  const Stats& stats() const { return stats_; }
  const std::string& dir() const { return dir_; }
  std::string PathOf(const TableFileKey& key) const;

 private:
  TableCache(std::string dir, uint64_t max_bytes) : dir_(std::move(dir)), max_bytes_(max_bytes) {}
  void Trim();

  std::string dir_;
  uint64_t max_bytes_;
  // The entries' total size as of the last listing plus what this cache
  // stored since (others' stores are seen at the next listing).
  uint64_t known_bytes_ = 0;
  uint64_t known_entries_ = 0;
  bool listed_ = false;
  Stats stats_;
};

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_TABLE_CACHE_H_
