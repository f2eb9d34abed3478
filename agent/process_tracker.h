// What ehprof knows about each profiled process: its executable mappings,
// the unwind table behind each, and the BPF `procs` entry built from them.
// Mapping snapshots are kept with the time they were taken, so a sample is
// resolved against the mappings it was taken under, across exec and exit.
#ifndef EHPROF_AGENT_PROCESS_TRACKER_H_
#define EHPROF_AGENT_PROCESS_TRACKER_H_

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/file_tables.h"
#include "unwind_tables/unique_fd.h"

namespace ehprof {

struct TrackedMapping {
  uint64_t start = 0, end = 0;
  uint64_t bias = 0;          // ELF vaddr = addr - bias
  std::string path;           // "[vdso]", "//anon" for anonymous code
  std::string build_id;
  std::optional<FileKey> file;
  // The mapped file itself ("/proc/self/fd/N", an fd ehprof keeps): read
  // when `path` no longer holds it (replaced or deleted on disk).
  std::string kept_path;
};

struct ResolvedAddr {
  const TrackedMapping* mapping = nullptr;
  uint64_t elf_vaddr = 0;
};

class ProcessTracker {
 public:
  ProcessTracker(FileTables* files, int procs_map_fd);

  // Reads /proc/PID/maps and (re)writes the process's entry. NotFound when
  // the process is gone.
  absl::Status Refresh(uint32_t pid, uint64_t now_ns);
  // Drops the BPF entry and the table references; the history stays.
  void Exit(uint32_t pid);
  // Rewrites the entries of processes that map any of `keys` (their
  // tables became ready or failed).
  void TablesChanged(const std::vector<FileKey>& keys);
  bool tracking(uint32_t pid) const { return live_.count(pid) > 0; }
  std::vector<uint32_t> live_pids() const;

  // The executable mappings of pid in force at time_ns (empty if unknown).
  const std::vector<TrackedMapping>* MappingsAt(uint32_t pid, uint64_t time_ns) const;
  // addr as mapped in pid at time_ns; nullopt when no mapping holds it.
  std::optional<ResolvedAddr> Resolve(uint32_t pid, uint64_t time_ns, uint64_t addr) const;
  std::vector<std::string> TakeWarnings();
  // Build-ids of every file any tracked process mapped: path -> hex.
  std::map<std::string, std::string> BuildIds() const;

 private:
  struct Snapshot {
    uint64_t from_ns = 0;
    std::vector<TrackedMapping> mappings;  // executable only, sorted
  };
  // pid's snapshot in force at time_ns (the first one for samples that beat
  // it: a new process); null when pid was never seen.
  const Snapshot* SnapshotAt(uint32_t pid, uint64_t time_ns) const;
  void WriteEntry(uint32_t pid);
  void ReleaseFiles(const std::vector<TrackedMapping>& mappings);

  FileTables* files_;
  int procs_fd_;
  std::map<uint32_t, std::vector<Snapshot>> history_;
  std::set<uint32_t> live_;
  std::vector<std::string> warnings_;
  std::vector<uint8_t> vdso_image_;
  // An fd on every file a process mapped, for symbolizing after the
  // process (or the file's name) is gone.
  std::map<FileKey, UniqueFd> kept_;
};

// The calling process's vDSO image (the same for every process on the
// machine), or empty.
std::vector<uint8_t> ReadOwnVdso();

}  // namespace ehprof

#endif  // EHPROF_AGENT_PROCESS_TRACKER_H_
