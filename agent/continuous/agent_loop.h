// `ehprof agent`'s engine: a Recorder that never stops on its own, whose
// samples are aggregated as they arrive (StackAggregator, on the recording
// thread) and handed over once per interval to a worker thread that
// symbolizes them and gives each interval's profiles to the sinks. The
// recording thread never waits for the worker: intervals queue (at most
// kMaxQueued; the oldest is dropped and counted when the worker falls
// behind).
#ifndef EHPROF_AGENT_CONTINUOUS_AGENT_LOOP_H_
#define EHPROF_AGENT_CONTINUOUS_AGENT_LOOP_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "agent/continuous/agent_memory.h"
#include "agent/continuous/interval_output.h"
#include "agent/continuous/interval_profile.h"
#include "agent/continuous/interval_symbolizer.h"
#include "agent/continuous/container_names.h"
#include "agent/continuous/service_name.h"
#include "agent/record/recorder.h"
#include "bpf/ehprof_abi.h"
#include "base/mutex.h"
#include "base/unique_fd.h"
#include "base/warnings.h"

namespace ehprof {

struct AgentOptions {
  RecordOptions record;          // targets, event, frequency, map sizes
  double interval_s = 10;
  std::string service_name;      // for every process; empty: per process
  // Distinct per-process service names in one interval; the rest go to
  // ServiceNames::kOverflow.
  size_t max_services = ServiceNames::kDefaultMaxPerInterval;
  // containers/storage's root, where container names are looked up
  // (container_names.h); "" for none.
  std::string container_storage = ContainerNames::kDefaultStorage;
  // The cgroup labels each process's series carries (CgroupLabels bits).
  unsigned cgroup_labels = kAllCgroupLabels;
  IntervalSymbolizer::Options symbols;
  // Called on the worker thread for each interval (may block: sampling
  // goes on).
  std::function<void(const IntervalOutput&)> sink;
  // A line of self-metrics this often (0: never).
  double log_every_s = 60;
  // The resident size the agent plans within: above it after an
  // interval, the least recently used files' symbol data is evicted (one
  // file at a time, never a file the interval used) until the excess is
  // freed, and freed memory is returned to the system. 0: no limit.
  uint64_t memory_limit_bytes = 96ull << 20;
  // Runs on the recording thread at every tick (SIGHUP's log reopening).
  std::function<void()> on_tick;
  // More of the self-metrics line (the sinks' counters).
  std::function<std::string()> extra_metrics;
};

struct AgentCounters {
  uint64_t samples = 0;           // in intervals handed over
  uint64_t samples_lost = 0;      // the ring buffer was full (BPF counter)
  uint64_t walks_cut = 0;         // stopped by the walk time budget (BPF counter)
  // Walks stopped for want of a table or a process entry (agent/deferred/):
  // finished late, and not copied for the per-CPU budget (BPF counter).
  uint64_t walks_finished_late = 0;
  uint64_t deferred_budget_drops = 0;
  uint64_t intervals = 0;         // handed to the sinks
  uint64_t intervals_dropped = 0; // the worker fell behind
  uint64_t stacks_dropped = 0;    // over the distinct-stack cap
  uint64_t files_evicted = 0;     // files whose symbol data went for the memory budget
  uint64_t bytes_evicted = 0;     // the heap that freed
  uint64_t services = 0;          // distinct service names in the last interval
  uint64_t services_overflowed = 0;  // processes counted as the overflow service (once per interval)
  // Samples by why their user walk stopped (enum ehp_stop_reason), as of
  // the last hand-over.
  uint64_t walk_stops[EHP_STOP_REASON_COUNT] = {};
  // As of the last interval: the symbolizer's state and the interval's
  // own size.
  IntervalSymbolizer::Usage symbols;
  uint64_t interval_bytes = 0;    // the aggregated interval (ids, counts)
  uint64_t output_bytes = 0;      // its resolved profile, handed to the sinks
  // As of the last hand-over: the processes and files the recording keeps.
  TrackedState state;
};

// This process's resident memory.
uint64_t ResidentBytes();
// "RSS 41.2 MB = heap in use 18.0 MB (symbols ...) + ..." for the metrics line.
std::string MemoryLine(const AgentCounters& c, const MemoryBreakdown& m);
// The same as Prometheus metrics: ehprof_resident_memory_bytes, and
// ehprof_memory_bytes{part="..."} for each part.
std::string MemoryMetrics(const AgentCounters& c);

class AgentLoop : private SampleSink {
 public:
  static constexpr size_t kMaxQueued = 4;
  explicit AgentLoop(AgentOptions options);
  ~AgentLoop();
  // Samples until SIGINT/SIGTERM (or the recording fails), then hands over
  // the last partial interval and waits for the worker to finish it.
  absl::Status Run();
  // Safe from any thread.
  AgentCounters counters() const;

 private:
  // The recorder's sink: each sample into the interval.
  void Add(RawSample&& s, const ProcessTracker& tracker) override;
  void OnTick(uint64_t now_ns);
  void HandOver(uint64_t now_ns);
  void Worker();
  // One interval: resolved, to the sinks, symbol memory trimmed.
  void Export(IntervalSymbolizer& symbolizer, IntervalProfile& p);
  void LogMetrics(uint64_t now_ns);

  AgentOptions options_;
  // The one sink the recording and the interval worker's symbolization
  // say their problems to (thread-safe); the recorder prints them.
  Warnings warnings_;
  Recorder* recorder_ = nullptr;
  StackAggregator aggregator_;
  ServiceNames services_;
  ContainerNames containers_;  // the interval worker's
  uint64_t next_end_ns_ = 0;
  uint64_t next_log_ns_ = 0;
  uint64_t started_cpu_ns_ = 0;
  uint64_t next_stats_ns_ = 0;
  bool said_overflow_ = false;
  uint64_t stops_[EHP_STOP_REASON_COUNT] = {};  // the recording thread's count
  std::atomic<uint64_t> lost_{0};  // refreshed each second on the recording thread
  std::atomic<uint64_t> walks_cut_{0};  // likewise
  std::atomic<uint64_t> finished_late_{0}, deferred_budget_drops_{0};  // likewise

  mutable Mutex mu_;
  std::condition_variable cv_;
  std::deque<IntervalProfile> queue_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  AgentCounters counters_ ABSL_GUARDED_BY(mu_);
  // /dev/null: put in place of a dropped interval's released fds, which
  // then pin no file while their numbers wait for the worker to forget
  // their paths.
  UniqueFd placeholder_;
  std::thread worker_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_AGENT_LOOP_H_
