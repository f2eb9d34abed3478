// The one rule for where a user frame is and what names code without a
// file, shared by `record` (ResolveSamples, after recording) and the agent
// (StackAggregator as a sample arrives and again at the interval's
// hand-over; IntervalSymbolizer when the interval is symbolized):
//  - a frame value (bpf/ehprof_abi.h's EHP_FRAME_* bits over the address)
//    stands for its call site: a return address minus one, an exact pc
//    (the leaf, a signal frame's) as it is;
//  - the site is located in the process tracker's history at (pid, time):
//    in a file's mapping, in anonymous memory, or in no mapping known;
//  - a frame in anonymous memory or in no mapping belongs to its process
//    (never merged with another's at the same address) and is named from
//    that process's JIT perf map, its /tmp/perf-PID.map (JitSymbols).
#ifndef EHPROF_AGENT_RESOLVE_FRAME_LOCATOR_H_
#define EHPROF_AGENT_RESOLVE_FRAME_LOCATOR_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "agent/process/process_tracker.h"
#include "agent/resolve/resolved_sample.h"
#include "base/warnings.h"
#include "bpf/ehprof_abi.h"
#include "symbolizer/perf_map.h"

namespace ehprof {

// The address a user frame value is shown and named at.
inline uint64_t FrameSite(uint64_t value) {
  const uint64_t addr = value & EHP_FRAME_ADDR_MASK;
  return (value & EHP_FRAME_EXACT) ? addr : addr - 1;
}

struct FrameLocation {
  enum class Kind : uint8_t {
    kFile,      // in a mapping of a file (or [vdso]): mapping, elf_vaddr
    kAnon,      // in anonymous memory (JIT code): mapping
    kUnmapped,  // in no mapping the tracker knows (yet)
  };
  Kind kind = Kind::kUnmapped;
  uint64_t site = 0;
  const TrackedMapping* mapping = nullptr;
  uint64_t elf_vaddr = 0;
};

// `site` (a FrameSite) in pid's mappings at time_ns.
FrameLocation LocateSite(const ProcessTracker& tracker, uint32_t pid, uint64_t time_ns, uint64_t site);
inline FrameLocation LocateUserFrame(const ProcessTracker& tracker, uint32_t pid, uint64_t time_ns,
                                     uint64_t value) {
  return LocateSite(tracker, pid, time_ns, FrameSite(value));
}

// JIT code's names, from each process's perf map, read off the sampling
// path (record: while resolving; the agent: while an interval is
// symbolized). Each process's map is read once and kept; after NextRound
// (the agent: each interval) it is looked at again (one stat) on its next
// lookup and, when it grew, only the lines written since are read; a map
// replaced or shrunk is read anew. Only whole lines are read (the JIT may
// be writing the last one; a line longer than 1 MiB is skipped). A missing
// map names nothing and warns of nothing; a map with malformed lines is one
// warning. What is kept for all processes is bounded in entries and in
// bytes: past max_entries or max_bytes the least recently used processes'
// maps are dropped (read again if needed); one process's map that holds
// either bound alone is not read further (nor past 256 MiB of file).
// Maps are found and opened as perf_map_file.h says.
class JitSymbols {
 public:
  struct Options {
    size_t max_entries = SIZE_MAX;
    // Empty: each process's own /tmp (through /proc/PID/root, its pid as it
    // sees it); else the directory all perf-PID.map files are in.
    std::string dir;
    size_t max_bytes = SIZE_MAX;  // PerfMap::bytes() for all processes
  };
  // Malformed maps and maps refused for their owner go to `warnings` (not
  // owned; it outlives the symbols).
  JitSymbols(Options options, Warnings* warnings);

  // The frame at `site` in pid's anonymous memory (`anon`) or in no
  // mapping: named from the perf map (jit, its dso the map), else
  // "[unknown]" in "[anon]" or "[unknown]".
  ResolvedFrame Frame(uint32_t pid, uint64_t site, bool anon);
  void NextRound() { ++round_; }
  // Entries, and the bytes they hold, kept for all processes.
  size_t entries() const { return entries_; }
  size_t bytes() const { return bytes_; }
  size_t processes() const { return maps_.size(); }

 private:
  struct Cached {
    PerfMap map;
    uint64_t dev = 0, ino = 0;   // the file read (0: none)
    uint64_t size = 0;           // its size when last looked at
    int64_t mtime_ns = 0;
    uint64_t parsed = 0;         // bytes read: whole lines
    bool in_long_line = false;   // parsed is inside a line being skipped
    uint64_t long_lines = 0;     // lines skipped for their length
    std::string name;            // the map's name in frames and warnings
    uint64_t checked_round = 0;  // the round it was last looked at
    uint64_t used = 0;           // lookups' clock, for eviction
  };
  const Cached& MapOf(uint32_t pid);
  // Brings c up to the file: reads what was appended, or all of it anew.
  void Refresh(uint32_t pid, Cached* c);
  // Reads c's file from c->parsed to `until`, whole lines, within bounds.
  void ReadLines(int fd, uint64_t until, Cached* c);
  bool OverBounds() const;
  void Evict(uint32_t keep);

  Options options_;
  absl::flat_hash_map<uint32_t, Cached> maps_;
  uint64_t round_ = 1, clock_ = 0;
  size_t entries_ = 0, bytes_ = 0;
  Warnings* warnings_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_RESOLVE_FRAME_LOCATOR_H_
