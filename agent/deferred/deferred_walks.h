// The cold window's samples finished late. A sample whose in-kernel walk
// stopped because its table was not loaded yet or its process was not
// known yet comes after an EHP_EVENT_DEFERRED record of the same CPU: the
// walk's registers where it stopped and a copy of the stack from there
// (bpf/deferred.bpf.h). Such a sample is held here; once the tracker knows
// the process's mappings and the tables of the files the walk goes through
// are loaded, the same walk (bpf/host's C build, over the session's own
// table maps) continues from those registers over the copy, and the sample
// goes on with the kernel's frames followed by the late ones, its stop
// reason the late walk's and EHP_SAMPLE_FINISHED_LATE in its flags. A
// sample that cannot be finished (its table never built, its process never
// read, held past max_hold_ns, or the recording ends) goes on as it came:
// kernel frames and its own stop reason. The late walk has no runtime
// (Python, Ruby, PHP, Perl) frames: it reads no runtime memory, and what
// it would read has changed since. Where it meets an interpreter's loop
// (the trackers' InInterpreterLoop), the stack is cut there with
// EHP_STOP_LATE_RUNTIME, not shown without the runtime's frames.
#ifndef EHPROF_AGENT_DEFERRED_DEFERRED_WALKS_H_
#define EHPROF_AGENT_DEFERRED_DEFERRED_WALKS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "agent/deferred/map_reader_env.h"
#include "agent/process/process_tracker.h"
#include "agent/record/raw_sample.h"
#include "agent/tables/file_tables.h"
#include "agent/tables/map_writer.h"

namespace ehprof {

struct DeferredStats {
  uint64_t finished = 0;    // samples whose walk was finished late
  uint64_t unfinished = 0;  // held, then let go as they came (nothing to finish with)
  uint64_t over_cap = 0;    // not held: their process (or all) had as many held as allowed
  uint64_t held_peak = 0;   // the most samples held at once
  uint64_t bytes = 0;       // the DEFERRED records' bytes through the ring buffer
};

// Whether pc lies in an interpreter loop of process pid (the trackers').
using LoopTest = std::function<bool(uint32_t pid, uint64_t pc)>;

// How many of a late walk's n native frames (leaf first) stand before the
// first one in an interpreter loop of pid: n when none is. 0 as well when
// the frame the kernel's walk stopped at (`at`) is in one and that walk
// read no runtime frames (`kernel_user` holds none): they were never read.
uint32_t LateFramesBeforeLoop(uint32_t pid, const std::vector<uint64_t>& kernel_user, const ehp_deferred& at,
                              const uint64_t* frames, uint32_t n, const LoopTest& in_loop);

class DeferredWalks {
 public:
  struct Options {
    size_t max_per_process = 512;             // held samples of one process
    size_t max_bytes = size_t{64} << 20;      // their stack copies, all processes
    uint64_t max_hold_ns = 30'000'000'000ull;  // then let go unfinished
    uint64_t retry_ns = 200'000'000ull;        // after a walk that had to wait
    // A late walk that ends at a pc in no mapping is taken only once the
    // sample is this old (the maps' later reads may hold it).
    uint64_t settle_ns = 1'000'000'000ull;
  };
  // tracker, files: the recording's (not owned; they outlive this); tables:
  // readers of the session's table maps.
  DeferredWalks(const ProcessTracker* tracker, const FileTables* files, TableMaps tables, Options options);
  DeferredWalks(const ProcessTracker* tracker, const FileTables* files, TableMaps tables)
      : DeferredWalks(tracker, files, std::move(tables), Options{}) {}

  // unset: no process runs an interpreter loop.
  void SetInterpreterLoops(LoopTest in_loop) { in_loop_ = std::move(in_loop); }

  // A DEFERRED record: the walk state of the next sample of its CPU.
  void AddCapture(const ehp_event& header, DeferredCapture&& c, size_t record_size);
  // Takes s (and its record's size) when its capture came just before it
  // and there is room; false: s goes on as it is.
  bool Hold(RawSample& s, size_t record_size);
  // Finishes what can be finished now; lets go of what waited too long,
  // or of everything left when final. emit gets each sample let go.
  void Retry(uint64_t now_ns, bool final, absl::FunctionRef<void(RawSample&&, size_t)> emit);
  size_t held() const { return held_.size(); }
  bool Holds(uint32_t pid) const { return held_per_pid_.count(pid) > 0; }
  const DeferredStats& stats() const { return stats_; }

 private:
  struct Held {
    RawSample sample;
    size_t record_size = 0;
    DeferredCapture capture;
    uint64_t arrived_ns = 0;  // the sample's time (CLOCK_MONOTONIC)
    // A walk that ran and met another file still building waits this long
    // before it runs again: a round reads the table maps anew.
    uint64_t next_try_ns = 0;
  };
  enum class Outcome { kFinished, kWaiting, kUnfinished };
  // The late walk of h, its frames appended when it ran to an end;
  // kUnfinished: it ran and found nothing to add.
  Outcome Finish(Held& h, uint64_t now_ns);
  // Whether what h's walk lacked is there now (its process's mappings;
  // the table of the file its pc is in), its process's being `mappings`.
  bool Ready(const Held& h, const std::vector<TrackedMapping>& mappings) const;

  const ProcessTracker* tracker_;
  const FileTables* files_;
  TableMaps tables_;
  Options options_;
  MapReaderEnv env_;
  std::unique_ptr<ehp_proc> proc_;  // the entry the late walk reads (33 KiB)
  struct Pending {
    uint32_t tid = 0;
    uint64_t time_ns = 0;
    DeferredCapture capture;
  };
  std::map<uint32_t, Pending> last_capture_;  // by CPU, until its sample comes
  std::deque<Held> held_;
  std::map<uint32_t, size_t> held_per_pid_;
  size_t held_bytes_ = 0;
  DeferredStats stats_;
  LoopTest in_loop_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_DEFERRED_DEFERRED_WALKS_H_
