// What ehprof knows about each profiled process: its executable mappings,
// the unwind table behind each, and the BPF `procs` entry built from them.
// Mapping snapshots are kept with the time they were taken, so a sample is
// resolved against the mappings it was taken under, across exec and exit.
// Exec and exit end a process image: a sample after that end is never
// resolved against the image before it, so a reused pid or an exec'd binary
// cannot borrow the previous one's mappings.
#ifndef EHPROF_AGENT_PROCESS_PROCESS_TRACKER_H_
#define EHPROF_AGENT_PROCESS_PROCESS_TRACKER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agent/process/proc_maps.h"
#include "agent/tables/file_tables.h"
#include "agent/tables/kernel_file_index.h"
#include "agent/tables/map_writer.h"
#include "base/unique_fd.h"
#include "base/warnings.h"

namespace ehprof {

struct TrackedMapping {
  uint64_t start = 0, end = 0;
  uint64_t bias = 0;          // ELF vaddr = addr - bias
  uint64_t offset = 0;        // file offset of start
  std::string path;           // "[vdso]", "//anon" for anonymous code
  std::string build_id;
  std::optional<FileKey> file;
  KernelFileKey kernel_file;  // as the maps name it; unknown for [vdso], anonymous code
  // The mapped file itself ("/proc/self/fd/N", an fd ehprof keeps): read
  // when `path` no longer holds it (replaced or deleted on disk).
  std::string kept_path;
  // Its separate debug file found inside the process's root (a container's
  // /usr/lib/debug), an fd kept too; empty when none was found there.
  std::string debug_path;
};

// A kept fd no remembered mapping needs any more, handed to whoever
// symbolizes the last samples that named its path: it closes the fd after
// them (and forgets what it cached under the path, which the next file
// kept may be given).
struct ReleasedFile {
  std::string path;  // "/proc/self/fd/N"
  UniqueFd fd;
};

struct ResolvedAddr {
  const TrackedMapping* mapping = nullptr;
  uint64_t elf_vaddr = 0;
};

// The BPF entry's mapping for m, as its file's table (f, may be null)
// stands now: with the table, pending, anonymous code, or none.
ehp_mapping EntryMapping(const TrackedMapping& m, const FileInfo* f);

class ProcessTracker {
 public:
  // procs: the BPF procs map (BpfMapWriter), an in-memory one in tests, or
  // null to track without writing entries (resolving only). Problems go
  // to `warnings` (not owned; it outlives the tracker), each topic once.
  ProcessTracker(FileTables* files, std::unique_ptr<MapWriter> procs, Warnings* warnings);

  // index (may be null): told which kernel file each ready table belongs
  // to, and which interpreter each executable runs with, so the kernel side
  // can map them into new processes itself.
  void SetKernelIndex(KernelFileIndex* index) { kernel_index_ = index; }

  // Reads /proc/PID/maps and (re)writes the process's entry. NotFound when
  // the process is gone.
  absl::Status Refresh(uint32_t pid, uint64_t now_ns);
  // A mapping the kernel side added to pid's entry at time_ns (an
  // EHP_EVENT_MAPPING): kept for resolving, as if read from the maps.
  // Ignored when the file is not one the index knows.
  void AddKernelMapping(uint32_t pid, uint64_t time_ns, const ehp_mapping& m,
                        const KernelFileKey& file, uint64_t offset);
  // parent forked child at time_ns (the kernel copied its entry): the
  // child's image starts as the parent's, until its maps are read.
  void Forked(uint32_t parent, uint32_t child, uint64_t time_ns);
  // Refresh from maps already read (tests; ReadProcMaps' entries).
  void Apply(uint32_t pid, const std::vector<MapsEntry>& maps, uint64_t now_ns);
  // pid exec'd at time_ns: the image before it ends there.
  void ImageEnded(uint32_t pid, uint64_t time_ns);
  // pid exited at time_ns: drops the BPF entry and the table references.
  // The history stays for resolving samples, unless `keep_history` is false
  // (no sample came from this image: a short-lived process costs nothing).
  void Exit(uint32_t pid, uint64_t time_ns, bool keep_history = true);
  // Forgets the history of pid when no process of that pid runs (for a
  // caller that locates samples as they come: the last one needing it has
  // been located), so its files can be released.
  void ForgetExited(uint32_t pid) {
    if (!live_.count(pid)) history_.erase(pid);
  }
  // Whether addr lies in an executable mapping of pid's latest snapshot,
  // including mappings left out of the BPF entry (over EHP_MAX_MAPPINGS):
  // re-reading the maps would not help such a pc.
  bool Covers(uint32_t pid, uint64_t addr) const;
  // Rewrites the entries of processes that map any of `keys` (their
  // tables became ready or failed).
  void TablesChanged(const std::vector<FileKey>& keys);
  bool tracking(uint32_t pid) const { return live_.count(pid) > 0; }
  std::vector<uint32_t> live_pids() const;
  size_t live_count() const { return live_.size(); }

  // The executable mappings of pid in force at time_ns (empty if unknown).
  const std::vector<TrackedMapping>* MappingsAt(uint32_t pid, uint64_t time_ns) const;
  // The mappings in force at time_ns, with those of the same image's later
  // snapshots that overlap none of them (a library ld.so or dlopen mapped
  // after that snapshot was read, maybe before time_ns) and the parts of
  // later anonymous code none of them covers (a JIT's region grown),
  // sorted by start; empty if pid is unknown. What a walk finished late
  // walks over.
  std::vector<TrackedMapping> MappingsFrom(uint32_t pid, uint64_t time_ns) const;
  // addr as mapped in pid at time_ns; nullopt when no mapping holds it.
  std::optional<ResolvedAddr> Resolve(uint32_t pid, uint64_t time_ns, uint64_t addr) const;
  // Processes the full BPF map refused an entry: their samples stop at the
  // leaf ("process not yet known") until there is room.
  uint64_t procs_refused() const { return procs_full_; }
  // Opens a file by its path before any process maps it (a recorded
  // command's executable and libraries, prefetched), keeps the fd as for a
  // mapped file and registers the file through it: a mapping the kernel
  // reports later is then symbolized from this very file, even once
  // another file has been renamed over the path.
  absl::StatusOr<FileKey> OpenFileByPath(const std::string& path);
  // Registers the vDSO (the same image in every process on the machine)
  // before any process is read, so its table can be ready for an exec's
  // first samples: the kernel side maps it at exec (bpf/proc_learn.bpf.h).
  absl::StatusOr<FileKey> RegisterVdso();
  size_t history_size() const { return history_.size(); }
  size_t kept_files() const { return kept_.size() + kept_debug_.size(); }
  // For a caller that locates every sample as it arrives (the agent, at
  // each interval's end): forgets the snapshots a later one replaced at or
  // before `superseded_ns` (a long-lived process that maps and unmaps
  // library after library keeps its current mappings, not all it ever
  // had) and processes that left nothing but image ends behind, then takes
  // out the fds of files no remembered snapshot maps. Samples located
  // before may still name those files' paths: the caller closes the fds
  // only after symbolizing them. The next process mapping such a file
  // opens it anew. `ehprof record` never calls it: it resolves at the end.
  std::vector<ReleasedFile> ReleaseUnmappedFiles(uint64_t superseded_ns);
  // Build-ids of every file any tracked process mapped: path -> hex.
  std::map<std::string, std::string> BuildIds() const;

 private:
  struct Snapshot {
    uint64_t from_ns = 0;
    std::vector<TrackedMapping> mappings;  // executable only, sorted
    // Made from what the kernel side did (fork, exec, mmap), not from a
    // read of the maps: the BPF entry has kernel-added slots to clear.
    bool from_kernel = false;
  };
  struct History {
    std::vector<Snapshot> snaps;  // by from_ns
    std::vector<uint64_t> ends;   // image ends (exec, exit), ascending
    uint64_t last_exit_ns = 0;    // the latest exit among them
    // Where the kernel-added mappings user space has been told of since
    // the BPF entry was last written begin: those are in a snapshot (or a
    // later read of the maps dropped them); the entry's other kernel slots
    // are newer than anything user space knows and survive its next write.
    std::vector<uint64_t> kernel_seen;
    // CLOCK_MONOTONIC (bpf_ktime_get_ns's clock) when user space last
    // replaced the BPF entry.
    uint64_t written_ns = 0;
    // The image a time belongs to: the number of ends at or before it.
    size_t ImageAt(uint64_t time_ns) const;
  };
  // The snapshots [first, last) of pid's image in force at time_ns, first
  // being the one in force (or the image's first, for samples that beat
  // it); empty when that image was never read.
  std::pair<const Snapshot*, const Snapshot*> SnapshotsAt(uint32_t pid, uint64_t time_ns) const;
  TrackedMapping Track(uint32_t pid, const MapsEntry& e);
  // Opens the file behind a file mapping (map_files, else inside the
  // process's root), keeps the fd in kept_ and registers the file through
  // it. On a failure from a missing capability sets *topic ("map_files",
  // "proc_root"): every such file fails alike.
  absl::StatusOr<FileKey> OpenMappedFile(uint32_t pid, const MapsEntry& e, std::string* topic);
  // Keeps fd (a file opened for `path`) in kept_ unless a file with its key
  // is kept already (*added says which), and registers the file through
  // the kept fd.
  absl::StatusOr<FileKey> KeepAndRegister(UniqueFd fd, const std::string& path, bool* added);
  // A warning once per topic: Refresh re-reads the same mappings.
  void WarnOnce(const std::string& topic, std::string warning);
  void WriteEntry(uint32_t pid);
  // Into proc (about to replace pid's BPF entry): the entry's kernel-added
  // slots user space has not been told of and `chosen` does not cover.
  void CarryKernelSlots(uint32_t pid, const std::vector<const TrackedMapping*>& chosen,
                        ehp_proc* proc);
  // After the kernel added m to pid's entry at time_ns: writes the entry
  // anew if one of our writes may have replaced it under the kernel (the
  // slot went into the element our write swapped out).
  void RewriteIfLost(uint32_t pid, uint64_t time_ns, const ehp_mapping& m);
  // Tells the kernel index which interpreter pid's executable runs with
  // (from /proc/PID/auxv's AT_ENTRY and AT_BASE).
  void LearnInterpreter(uint32_t pid, const std::vector<MapsEntry>& maps);
  // Makes snap pid's latest snapshot: references moved to its files.
  void PushSnapshot(uint32_t pid, Snapshot snap);
  void ReleaseFiles(const std::vector<TrackedMapping>& mappings);
  // kept_path and debug_path of a mapping of the file `key`.
  void SetKeptPaths(const FileKey& key, TrackedMapping* m) const;
  // For a file first seen in a process whose root is not ours: its debug
  // file inside that root, kept in kept_debug_.
  void KeepDebugFileInRoot(uint32_t pid, const std::string& path, const FileKey& key);

  FileTables* files_;
  KernelFileIndex* kernel_index_ = nullptr;
  std::unique_ptr<MapWriter> procs_;
  std::map<uint32_t, History> history_;
  std::set<uint32_t> live_;
  std::set<uint32_t> over_limit_warned_;
  std::set<uint32_t> refused_;  // live pids the BPF map had no room for
  uint64_t procs_full_ = 0;     // processes it refused
  Warnings* warnings_;
  std::vector<uint8_t> vdso_image_;
  // An fd on every file a remembered snapshot maps, for symbolizing after
  // the process (or the file's name) is gone; until ReleaseUnmappedFiles.
  std::map<FileKey, UniqueFd> kept_;
  std::map<FileKey, UniqueFd> kept_debug_;
};

// The mappings a process entry holds: all when they fit, else at most
// `limit` (each file's first mapping before any file's second, loader_like
// ones first within a file), by address.
std::vector<const TrackedMapping*> ChooseEntryMappings(
    const std::vector<TrackedMapping>& all, size_t limit,
    const std::function<bool(const TrackedMapping&)>& loader_like);


}  // namespace ehprof

#endif  // EHPROF_AGENT_PROCESS_PROCESS_TRACKER_H_
