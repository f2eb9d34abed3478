// One unwind table per distinct file (dev, inode, mtime, size), shared by
// every process that maps it, built on a worker thread so table builds never
// delay sampling or event handling, and evicted when no process uses it.
#ifndef EHPROF_AGENT_FILE_TABLES_H_
#define EHPROF_AGENT_FILE_TABLES_H_

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/table_store.h"
#include "unwind_tables/elf_file.h"

namespace ehprof {

struct FileKey {
  uint64_t dev = 0, inode = 0, size = 0;
  int64_t mtime_ns = 0;
  auto operator<=>(const FileKey&) const = default;
};

struct FileInfo {
  std::string path;        // as the process's maps name it
  std::string build_id;
  std::vector<ElfSegment> loads;  // PT_LOADs, for load biases
  enum class State { kPending, kReady, kFailed, kNoSpace } state = State::kPending;
  uint32_t table_id = 0;   // when kReady
  std::string error;       // when kFailed / kNoSpace
  uint32_t refs = 0;       // processes mapping it
  uint64_t rows = 0, table_bytes = 0;
};

class FileTables {
 public:
  explicit FileTables(TableStore* store);
  ~FileTables();  // stops the worker

  // The file behind `open_path` (a /proc/PID/map_files link, or a path),
  // registered on first sight and its table build queued. Reads only the
  // ELF headers on this thread. `image` non-empty: an in-memory ELF (vDSO).
  absl::StatusOr<FileKey> Register(const std::string& open_path, const std::string& display_path,
                                   std::vector<uint8_t> image = {});
  const FileInfo* Find(const FileKey& key) const;
  void AddRef(const FileKey& key);
  void Release(const FileKey& key);  // unloads the table at zero refs

  // Loads finished builds into the BPF maps; returns the keys that became
  // ready (their processes' entries need rewriting). Main thread only.
  std::vector<FileKey> CollectFinished();
  // Problems worth one line each (failed builds, full maps), drained.
  std::vector<std::string> TakeWarnings();
  size_t pending() const;

 private:
  struct Job {
    FileKey key;
    std::string open_path;
    std::string name;
    std::vector<uint8_t> image;
  };
  struct Done {
    FileKey key;
    absl::StatusOr<CompactTable> table;
    uint64_t rows = 0;
  };
  void WorkerLoop();

  TableStore* store_;
  std::map<FileKey, FileInfo> files_;
  std::vector<std::string> warnings_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::vector<Done> done_;
  size_t in_flight_ = 0;
  bool stop_ = false;
  std::thread worker_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_FILE_TABLES_H_
