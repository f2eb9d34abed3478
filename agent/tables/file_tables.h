// One unwind table per distinct file (dev, inode, mtime, size), shared by
// every process that maps it, built on worker threads so table builds never
// delay sampling or event handling. Builds go by demand, not in the order
// files were met: a file more processes map, or one a sample stopped at
// for want of its table, is built first. A table no process uses stays loaded
// (the next short-lived process running that binary finds it ready) until
// the maps run out of room (least recently used first) or it has been
// unused for kUnusedTableSeconds. Tables in use are never evicted. A file
// without a table (its build failed, or it has no CFI) is remembered as
// long, so the next process mapping it does not build again; then it is
// forgotten: a long run keeps what its live processes map, not every file
// it ever saw.
#ifndef EHPROF_AGENT_TABLES_FILE_TABLES_H_
#define EHPROF_AGENT_TABLES_FILE_TABLES_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/tables/table_store.h"
#include "base/warnings.h"
#include "elf/elf_file.h"
#include "unwind_tables/table_builder.h"
#include "unwind_tables/table_cache.h"

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
  uint64_t entry = 0;             // e_entry
  // kNoCfi: the file has no CFI at all (a stripped Go binary: no .eh_frame
  // or .debug_frame), so it gets no table and the walk uses frame pointers
  // there, as for JIT code.
  enum class State { kPending, kReady, kFailed, kNoSpace, kNoCfi } state = State::kPending;
  uint32_t table_id = 0;   // when kReady
  std::string error;       // when kFailed / kNoSpace
  uint32_t refs = 0;       // processes mapping it
  uint64_t rows = 0, table_bytes = 0;
  // In FileTables::unused_ (ready) or idle_ (failed, no CFI) when refs == 0.
  std::list<FileKey>::iterator unused;
  std::chrono::steady_clock::time_point unused_since;
  // Where it was read from, for a retry when the maps were full.
  std::string open_path;
  std::vector<uint8_t> image;
};

class FileTables {
 public:
  // How long a table no process uses stays loaded for the next process
  // mapping the file; then the maps are back to what live processes need.
  static constexpr int kUnusedTableSeconds = 10;
  // Queued builds past which one whose file no process maps any more is
  // dropped instead of made.
  static constexpr size_t kBusyQueue = 64;
  // Builder threads: a whole host's start queues hundreds of files, and a
  // build is CPU-bound (libLLVM's or Chromium's take seconds), so two keep
  // a large one from holding every other back.
  static constexpr size_t kDefaultBuilders = 2;
  // Priority of a build a sample is waiting for (its walk stopped at
  // "table not loaded yet"), or the vDSO's (every process maps it): above
  // any count of processes mapping a file.
  static constexpr uint64_t kUrgent = uint64_t{1} << 32;
  // Priority of the files a process just exec'd maps (its executable,
  // ld.so, then its libraries): its first samples are there.
  static constexpr uint64_t kExeced = uint64_t{1} << 24;

  // cache (may be null): built tables are looked up there before a build
  // and stored after one, so the next run of a binary finds its table at
  // once. Used by the worker thread only.
  // build: how tables are built (BuildCompactTable).
  // Problems worth one line each (failed builds, full maps) go to
  // `warnings` (not owned; it outlives the tables), from both threads.
  FileTables(TableStore* store, Warnings* warnings, std::unique_ptr<TableCache> cache = nullptr,
             TableBuildOptions build = {}, size_t builders = kDefaultBuilders);
  ~FileTables();  // stops the workers

  // The clock expiry and retries go by (steady_clock by default); tests
  // move time on with their own.
  using Clock = std::function<std::chrono::steady_clock::time_point()>;
  void SetClock(Clock now) { now_ = std::move(now); }
  // Called with a file's key just before its table leaves the maps or the
  // file is forgotten, so nothing in the kernel can still pick its table id
  // up, or map a file no longer tracked.
  void SetUnloadHook(std::function<void(const FileKey&)> hook) { on_unload_ = std::move(hook); }
  // While held, the builders start no build: tests queue several and see
  // the order the builders take them in, whatever the machine's load.
  void HoldBuilds(bool hold);

  // The file behind `open_path` (a /proc/PID/map_files link, or a path),
  // registered on first sight and its table build queued. Reads only the
  // ELF headers on this thread. `image` non-empty: an in-memory ELF (vDSO).
  absl::StatusOr<FileKey> Register(const std::string& open_path, const std::string& display_path,
                                   std::vector<uint8_t> image = {});
  const FileInfo* Find(const FileKey& key) const;
  void AddRef(const FileKey& key);
  void Release(const FileKey& key);  // at zero refs the table becomes evictable
  // Moves key's queued build up by `weight` (each process mapping the file
  // adds 1; kUrgent for one a sample waits for). Nothing when it is not
  // queued (built, being built, or unknown).
  void Prioritize(const FileKey& key, uint64_t weight);

  // Loads finished builds into the BPF maps; returns the keys that became
  // ready (their processes' entries need rewriting). Main thread only.
  // A batch loads in the order the builders took its jobs (by priority),
  // not the order they finished: when the maps fill, which file is
  // refused must not be a race between a large table and small ones.
  std::vector<FileKey> CollectFinished();
  size_t pending() const;
  // Builds queued or under way (pending() without the finished ones).
  size_t building() const;

  struct Stats {
    uint64_t loaded = 0;        // tables placed in the maps
    uint64_t evicted = 0;       // unused tables evicted for room
    uint64_t expired = 0;       // unused tables unloaded after kUnusedTableSeconds
    uint64_t reused = 0;        // registrations that found an unused table
    uint64_t no_space = 0;      // files left without a table for lack of room
    uint64_t failed = 0;        // builds that failed or refused the file (frame pointers used)
    uint64_t from_cache = 0;    // builds served by the on-disk table cache
    size_t unused = 0;          // unused tables loaded now
    size_t idle = 0;            // unused files without a table, remembered now
    uint64_t dropped_builds = 0;  // queued builds dropped: no process mapped the file any more
    uint64_t hurried = 0;       // builds moved ahead because a sample waited for them
    size_t files = 0;           // files known now
  };
  Stats stats() const;

 private:
  struct Job {
    FileKey key;
    std::string open_path;
    std::string name;
    std::string build_id;
    std::vector<uint8_t> image;
    // Opened when registered: a short-lived process's map_files link is
    // gone by the time the worker gets to it.
    std::optional<ElfFile> elf;
  };
  struct Done {
    FileKey key;
    absl::StatusOr<CompactTable> table;
    uint64_t rows = 0;
    bool from_cache = false;
    uint64_t taken = 0;  // the order builders took the jobs in
  };
  // The table of a job: from the cache when it has it, else built (and
  // stored there).
  Done Build(Job& job);
  void WorkerLoop();
  // The queued job to build next: the highest priority, the oldest among
  // equals. Under mu_, jobs_ not empty.
  std::deque<Job>::iterator NextJob();
  bool EvictOne();
  // A file no process maps any more, its state final: a ready table to
  // unused_ (evictable), a failed or CFI-less file to idle_, one refused
  // for room forgotten (the next process mapping it tries again).
  void Park(std::map<FileKey, FileInfo>::iterator it);
  // Erases a file with no table loaded, after the unload hook.
  void Forget(std::map<FileKey, FileInfo>::iterator it);
  // A build's end: f's table loaded, or why not (its state).
  void Finish(Done& d, FileInfo& f);
  // Takes key's build out of a queue of at least kBusyQueue; false when it
  // is not queued (being built), the queue is short or a sample waits for
  // it (kUrgent).
  bool DropQueuedBuild(const FileKey& key);
  void Queue(const FileKey& key, const FileInfo& info, std::optional<ElfFile> elf = std::nullopt);
  // Forgets the unused files of `list` that have been unused for
  // kUnusedTableSeconds at `now` (unloading their tables); returns how many.
  uint64_t Expire(std::list<FileKey>* list, std::chrono::steady_clock::time_point now);

  TableStore* store_;
  const TableBuildOptions build_;
  Clock now_ = [] { return std::chrono::steady_clock::now(); };
  std::function<void(const FileKey&)> on_unload_;
  std::unique_ptr<TableCache> cache_;  // the workers' only, under cache_mu_
  std::mutex cache_mu_;
  std::map<FileKey, FileInfo> files_;
  std::list<FileKey> unused_;  // ready tables no process uses, most recent first
  std::list<FileKey> idle_;    // files without a table no process uses, likewise
  bool retry_no_space_ = false;
  std::chrono::steady_clock::time_point last_retry_{};
  Stats stats_;
  Warnings* warnings_;
  mutable std::mutex mu_;
  uint64_t from_cache_ = 0;                   // guarded by mu_
  uint64_t dropped_builds_ = 0;               // guarded by mu_
  uint64_t hurried_ = 0;                      // guarded by mu_
  std::map<FileKey, uint64_t> priority_;      // of queued jobs; guarded by mu_
  std::condition_variable cv_;
  std::deque<Job> jobs_;
  std::vector<Done> done_;
  size_t in_flight_ = 0;
  uint64_t taken_ = 0;  // jobs the builders took so far
  bool stop_ = false;
  bool held_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_TABLES_FILE_TABLES_H_
