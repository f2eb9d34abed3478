// What a recording does with each decoded BPF record, apart from the BPF
// session: keeps the process tracker current (forks, execs, mappings the
// kernel learned), notes whose maps must be read again (now, and after an
// exec while ld.so maps libraries) and who exited, names Python frames,
// and hands samples and --verify captures to the sink. The Recorder feeds
// it from the ring buffer; tests feed it a file of events, without root.
#ifndef EHPROF_AGENT_RECORD_EVENT_HANDLER_H_
#define EHPROF_AGENT_RECORD_EVENT_HANDLER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "agent/deferred/deferred_walks.h"
#include "agent/interp/interp_tracker.h"
#include "agent/process/process_tracker.h"
#include "agent/jvm/jvm_tracker.h"
#include "agent/python/python_tracker.h"
#include "agent/v8/v8_tracker.h"
#include "agent/record/raw_sample.h"
#include "agent/record/sample_sink.h"
#include "base/warnings.h"

namespace ehprof {

// The runtimes' trackers, which look at each process and name its frames
// of their runtime; each may be null (--no-python, --no-java, --no-js;
// --no-ruby, --no-php, --no-perl leave an interpreter out of interps).
// Each has Notice, MapsChanged, NameFrames, Exec, Exit and CheckProcess
// (ehprof check), called through ForEach.
struct RuntimeTrackers {
  PythonTracker* python = nullptr;
  JvmTracker* jvm = nullptr;
  V8Tracker* v8 = nullptr;
  // Ruby, PHP, Perl (agent/record/interp_trackers.h); not owned.
  std::vector<InterpTracker*> interps;
  // fn(tracker) for each tracker there is.
  template <typename Fn>
  void ForEach(Fn&& fn) const {
    if (python) fn(*python);
    if (jvm) fn(*jvm);
    if (v8) fn(*v8);
    for (InterpTracker* t : interps) fn(*t);
  }
};

// Reads pid's maps again (tracker->Refresh) and, when that worked, lets
// the runtimes look at it. A process's files and memory are its user's:
// an exception while reading them fails this pid, not the recording
// (base/guarded.h).
absl::Status TrackProcess(ProcessTracker* tracker, const RuntimeTrackers& runtimes, uint32_t pid,
                          uint64_t now_ns);

class EventHandler {
 public:
  // The recorder's part; each may be empty.
  struct Hooks {
    // Whether a decoded sample belongs to the recording (-D, the command
    // before its exec).
    std::function<bool(const RawSample&)> accept;
    // An accepted sample (its runtimes' frames named), before the sink has it;
    // `size`: its record's bytes.
    std::function<void(const RawSample&, size_t size)> count;
    std::function<void(uint32_t pid)> exec;    // after the tracker saw it
    std::function<void(uint32_t pid)> exited;  // its entry is gone
  };
  // warnings gets the failed re-reads.
  EventHandler(ProcessTracker* tracker, SampleSink* sink, RuntimeTrackers runtimes, Warnings* warnings,
               Hooks hooks)
      : tracker_(tracker), sink_(sink), runtimes_(runtimes), warnings_(warnings), hooks_(std::move(hooks)) {}

  // Samples whose walk the kernel could not finish are held there and
  // finished late (agent/deferred/); null (the default): none are.
  void SetDeferred(DeferredWalks* deferred) { deferred_ = deferred; }
  // The held samples finished, or let go, now (final: all of them).
  void RetryDeferred(uint64_t now_ns, bool final);

  // One record of the event source. An exception while handling it drops
  // that record (base/guarded.h).
  void Handle(const void* data, size_t size);
  // Due re-reads of maps, exits (an image no sample came from is
  // forgotten), and every second a look for processes gone without an
  // EXIT event.
  void ProcessPending(uint64_t now_ns);
  // When the next re-read after an exec is due (UINT64_MAX: none).
  uint64_t next_followup_ns() const { return followups_.empty() ? UINT64_MAX : followups_.begin()->first; }
  // Pids whose maps are to be read at the next ProcessPending.
  const std::set<uint32_t>& to_refresh() const { return to_refresh_; }
  // Pids that exited, forgotten at the next ProcessPending.
  const std::map<uint32_t, uint64_t>& to_exit() const { return to_exit_; }

 private:
  void HandleRecord(const void* data, size_t size);
  void HandleSample(RawSample&& s, size_t size);
  // An accepted sample, finished or not: counted and to the sink.
  void Emit(RawSample&& s, size_t size);
  // Whether an EHP_EVENT_UNKNOWN_PC of pid at time_ns may have its maps
  // read again (counting it): the kernel sends one every 2 ms while a
  // process's walks end in no mapping, and a stack that leads to garbage
  // (crafted, or a frame pointer chain's end) does so for good; a read of
  // a process with many mappings costs milliseconds.
  // At most one read a kUnknownPcReadIntervalNs; one asked for sooner is
  // made when the interval is over (followups_).
  bool UnknownPcReadDue(uint32_t pid, uint64_t time_ns);
  static constexpr uint64_t kUnknownPcReadIntervalNs = 50'000'000;
  struct UnknownPcReads {
    uint64_t next_ns = 0;    // the earliest the next read may be
    bool scheduled = false;  // a read at next_ns is in followups_
  };

  // Whether an EHP_EVENT_NEW_FILE of pid may have its maps read (counting
  // it): the kernel sends one every 2 ms at most while a process maps files
  // user space has not met (ld.so's libraries, plugins dlopen'd in a loop);
  // a process mapping unknown files for ever gets kNewFileReadsPerWindow
  // reads a window, not 500 a second.
  bool NewFileReadDue(uint32_t pid, uint64_t time_ns);
  static constexpr uint64_t kNewFileWindowNs = 1'000'000'000;
  static constexpr uint32_t kNewFileReadsPerWindow = 20;
  struct NewFileReads {
    uint64_t window_ns = 0;  // when the current window began
    uint32_t reads = 0;      // reads in it
  };

  ProcessTracker* tracker_;
  SampleSink* sink_;
  RuntimeTrackers runtimes_;
  Warnings* warnings_;
  Hooks hooks_;
  DeferredWalks* deferred_ = nullptr;
  std::set<uint32_t> to_refresh_;
  std::unordered_map<uint32_t, UnknownPcReads> unknown_pc_reads_;
  std::unordered_map<uint32_t, NewFileReads> new_file_reads_;
  std::map<uint32_t, uint64_t> to_exit_;  // pid -> exit time
  std::unordered_set<uint32_t> sampled_;  // pids with samples since their last exit
  std::unordered_set<uint32_t> exited_held_;  // pids exited with samples held (agent/deferred)
  uint64_t last_sweep_ns_ = 0;
  // Re-reads due after an exec, while ld.so maps the libraries: time -> pid.
  std::multimap<uint64_t, uint32_t> followups_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_EVENT_HANDLER_H_
