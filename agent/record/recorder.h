// `ehprof record`'s engine: starts the BPF session, keeps the process
// tracker and unwind tables current from the BPF events, collects samples
// until the duration ends, the command exits or a signal arrives.
#ifndef EHPROF_AGENT_RECORD_RECORDER_H_
#define EHPROF_AGENT_RECORD_RECORDER_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <map>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/process/process_tracker.h"
#include "agent/interp/interp_frame_table.h"
#include "agent/jvm/jvm_tracker.h"
#include "agent/python/python_tracker.h"
#include "agent/record/interp_trackers.h"
#include "agent/record/event_handler.h"
#include "agent/record/raw_sample.h"
#include "agent/record/run_control.h"
#include "agent/record/sample_sink.h"
#include "agent/sampling/event_source.h"
#include "agent/sampling/probe_spec.h"
#include "agent/sampling/sampling_session.h"
#include "agent/sampling/session_options.h"
#include "agent/tables/file_tables.h"
#include "agent/tables/kernel_file_index.h"
#include "agent/tables/table_store.h"
#include "agent/v8/v8_tracker.h"
#include "base/unique_fd.h"
#include "base/warnings.h"

namespace ehprof {

struct RecordOptions {
  uint64_t frequency_hz = 99;
  double duration_s = 0;              // 0: until the command exits or a signal
  double delay_ms = 0;                // -D: samples before this are left out
  std::vector<uint32_t> pids;         // -p
  std::vector<uint32_t> tids;         // -t
  bool all = false;                   // -a
  std::vector<std::string> command;   // -- CMD ARGS
  bool kernel = true;                 // false with -U
  bool user = true;                   // false with -K
  uint32_t unwinder = EHP_UNWINDER_DWARF;
  uint32_t event_type = 1;            // PERF_TYPE_SOFTWARE
  uint64_t event_config = 0;          // PERF_COUNT_SW_CPU_CLOCK
  std::string event_name = "cpu-clock";  // as -e named it (for errors)
  uint64_t sample_period = 0;         // -c: every Nth event instead of -F
  // What each CPU's stack walks in the kernel may take in every
  // EHP_BUDGET_WINDOW_NS (hidden --walk-budget-ns, for tests); 0: the
  // kernel's share for perf handlers (agent/record/walk_budget.h).
  uint64_t walk_budget_ns = 0;
  MapSizes sizes;
  bool live_status = false;           // a one-line status on stderr
  uint32_t verify_every = 0;          // --verify: capture every Nth sample
  // --alternate-interp-walks: every other sample of a CPU walks no
  // interpreter's frames, and the summary times the two halves apart.
  bool alternate_interp_walks = false;
  // Walks stopped for want of a table or a process entry are finished
  // later from a copy of their stack (bpf/deferred.bpf.h, agent/deferred/):
  // each CPU may copy this many KiB a second (--defer-budget); 0: off.
  // 8 MiB: a cold compiler (clang's 20-30 KiB stacks at 999 Hz while
  // libclang-cpp's table builds) overran 2 MiB (bench/whole_host.py --cold:
  // clang++ 92.0 % complete at 2048, 99.8 % at 8192).
  uint32_t deferred_kib_per_s = 8192;
  // Held samples (agent/deferred): let go unfinished after this long, and
  // their stack copies capped at this many bytes (DeferredWalks::Options).
  // The agent holds one interval at most, so an exited process's files are
  // let go with the interval after its last sample.
  uint64_t deferred_max_hold_ns = 30'000'000'000ull;
  size_t deferred_max_bytes = size_t{64} << 20;
  // How long the start waits for the tables of the processes running then
  // (--start-wait-ms, hidden: tests make the cold window with 0).
  uint32_t start_wait_ms = 3000;
  // --off-cpu: also (or, without sample_cpu, only) the time tasks spend off
  // the CPU, as samples with off_cpu_ns; blocks shorter than the minimum
  // are not sent, and only those left in the states of the mask count.
  bool sample_cpu = true;
  bool off_cpu = false;
  uint64_t off_cpu_min_ns = 0;
  uint32_t off_cpu_states = EHP_OFFCPU_ALL_STATES;
  // Filters (every event source): -C, --cgroup (a cgroup v2 and those
  // below it), --comm, --include-idle (the idle task, with -a).
  std::vector<uint32_t> cpus;
  std::string cgroup;
  std::string comm;
  bool include_idle = false;
  // -e uprobe:/usdt:/tracepoint:: stacks at each hit (sample_cpu false).
  std::vector<ProbeSpec> probes;
  // Equal samples (same thread, image, comm, stacks, stop reasons) are kept
  // once with a count, so memory grows with distinct stacks, not with
  // samples. Not for outputs that need every sample's time or --verify.
  bool aggregate = false;
  // The kernel side makes and extends process entries itself, at fork,
  // exec and mmap (bpf/proc_learn.bpf.h); false (--no-kernel-maps): only
  // from /proc/PID/maps, as before it could.
  bool kernel_maps = true;
  // Python frames in the walk (--no-python: native frames only).
  bool python = true;
  // Java frames of HotSpot JVMs named from their memory (--no-java: the
  // JVM's code by frame pointers and perf maps only).
  bool jvm = true;
  // JavaScript frames of V8 processes (node) named from their heap (--no-js:
  // their code by frame pointers and perf maps only).
  bool v8 = true;
  // Ruby, PHP and Perl frames named from the interpreters' memory
  // (--no-ruby, --no-php, --no-perl: their interpreter loop's native frames
  // only).
  InterpSelection interps;
  // The on-disk cache of built tables (--table-cache; empty: none) and its
  // budget.
  std::string table_cache_dir = kDefaultTableCacheDir;
  // Said when it cannot be used; the default is left out quietly (a user
  // with capabilities but not root cannot create it).
  bool table_cache_explicit = false;
  uint64_t table_cache_bytes = uint64_t{1} << 30;
  // Where samples go (null: the recorder's own SampleList, aggregated as
  // `aggregate` says, read back with samples()); on_tick runs after every
  // poll of the ring buffer (at least every 100 ms). Both on the recording
  // thread: keep them short. ehprof agent's sink aggregates each sample
  // into its interval while the tracker is current.
  SampleSink* sink = nullptr;
  std::function<void(uint64_t now_ns)> on_tick;
  // Loads and attaches the BPF programs: the command line passes
  // BpfSession::StartSampling (agent/session/), so the recorder links no
  // libbpf. Run fails without one.
  SessionStarter start_session;
};


struct RecordSummary {
  uint64_t samples = 0;
  uint64_t ringbuf_drops = 0;   // lost samples
  uint64_t event_drops = 0;
  double seconds = 0;
  int command_exit = -1;        // the command's exit status, or -1
  std::string command_error;    // it could not be started
  SamplingSession::ProgStats prog;   // with kernel.bpf_stats_enabled=1
  uint64_t cpu_time_ns = 0;     // ehprof's own CPU time while recording
  uint64_t setup_cpu_ns = 0;    // before: loading BPF (the verifier), maps
  std::string ended_by;         // "duration", "command exit", "SIGINT", ...
  FileTables::Stats tables;     // loads, evictions, refusals
  uint64_t procs_refused = 0;   // processes the full process map had no room for
  uint64_t off_cpu_ns = 0;      // --off-cpu: time blocked, over all events
  uint64_t off_cpu_untracked = 0;  // switch-outs the full BPF map could not keep
  uint64_t off_cpu_unseen = 0;     // blocks whose switch-in no sched_switch showed
  uint64_t walks_cut = 0;          // walks stopped by the time budget
  // Walks the kernel stopped for want of a table or a process entry:
  // copies sent (their bytes in deferred.bytes), copies the
  // per-CPU budget refused, and what user space did with them.
  uint64_t deferred_sent = 0;
  uint64_t deferred_budget_drops = 0;
  DeferredStats deferred;
  uint64_t walk_budget_ns = 0;     // that budget
  size_t remembered = 0;        // processes whose mappings are kept for resolving
  size_t kept_files = 0;        // files held open for symbolization
  JvmMemory jvm;                // the JVMs' metadata kept at the end
  // -a, -p: the processes running at start, read before the recording
  // began, and how long it waited for their files' tables (files still
  // without one when the wait ended).
  size_t start_processes = 0;
  uint64_t start_wait_ns = 0;
  size_t start_tables_late = 0;
  // Per sample, counted as they arrive (aggregated samples keep no per-
  // sample data): user walks by stop reason, BPF time per sample (a
  // uniform reservoir of at most kBpfNsReservoir), ring-buffer bytes.
  static constexpr size_t kBpfNsReservoir = 100000;
  std::map<unsigned, uint64_t> stop_reasons;
  uint64_t user_walked = 0;
  std::vector<uint32_t> bpf_ns;
  // --alternate-interp-walks: the samples that walked no interpreter's
  // frames (EHP_SAMPLE_INTERP_OFF) here, not in bpf_ns.
  std::vector<uint32_t> bpf_ns_interp_off;
  uint64_t ring_bytes = 0;
};

// What a long recording keeps per process and per file, which must follow
// what runs now, not what ever ran (the agent's metrics).
struct TrackedState {
  size_t processes = 0;     // live, each with a BPF process entry
  size_t remembered = 0;    // processes whose mappings are kept for resolving
  size_t kept_files = 0;    // fds held on mapped files (and their debug files)
  size_t kernel_files = 0;  // entries of the BPF file_tables map
  FileTables::Stats tables;
  TableStore::Usage store;  // the BPF table maps' use
  JvmMemory jvm;            // the JVMs' metadata as the interval ended
};

// The BPF session a recording needs (resolves --cgroup: NotFound names it).
absl::StatusOr<SessionOptions> SessionOptionsFor(const RecordOptions& o);

class Recorder {
 public:
  // Every part of the recording (tables, tracker, Python, events) says its
  // problems to `warnings`, the command's one sink (not owned; it outlives
  // the recorder); the recorder prints them as they come.
  Recorder(RecordOptions options, Warnings* warnings)
      : options_(std::move(options)),
        warnings_(warnings),
        list_(options_.aggregate),
        sink_(options_.sink != nullptr ? options_.sink : &list_) {}
  ~Recorder();
  // Records; the samples collected so far are kept whatever the result.
  absl::Status Run();
  // The samples and --verify captures (options.sink null: else none);
  // samples() in arrival order unless aggregated, list() either way.
  const SampleList& list() const { return list_; }
  const std::vector<RawSample>& samples() const { return list_.samples(); }
  const std::vector<VerifyCapture>& captures() const { return list_.captures(); }
  const ProcessTracker* tracker() const { return tracker_.get(); }
  // The Python code objects the samples' Python frames name (null: --no-python).
  const PythonCodeTable* python_codes() const { return python_ ? &python_->codes() : nullptr; }
  // PythonTracker::ForgetCodes (the agent, between intervals).
  void ForgetPythonCodes() {
    if (python_) python_->ForgetCodes();
  }
  // The methods the samples' Java frames name (null: --no-java).
  const JvmMethodTable* jvm_methods() const { return jvm_ ? &jvm_->methods() : nullptr; }
  // JvmTracker::ForgetMethods (the agent, between intervals).
  void ForgetJvmMethods() {
    if (jvm_) jvm_->ForgetMethods();
  }
  // The functions the samples' JavaScript frames name (null: none).
  const V8FunctionTable* v8_functions() const { return v8_ ? &v8_->functions() : nullptr; }
  // V8Tracker::ForgetFunctions (the agent, between intervals).
  void ForgetV8Functions() {
    if (v8_) v8_->ForgetFunctions();
  }
  // The Ruby, PHP and Perl frames the samples' interpreter words name.
  const InterpFrameTable* interp_frames() const { return &interp_frames_; }
  // Empties that table (the agent, between intervals).
  void ForgetInterpFrames() {
    interp_frames_.Clear();
    for (auto& t : interps_) t->ForgetFrames();
  }
  // ProcessTracker::ReleaseUnmappedFiles (the agent, between intervals;
  // on the recording thread).
  std::vector<ReleasedFile> ReleaseUnmappedFiles(uint64_t superseded_ns) {
    return tracker_ ? tracker_->ReleaseUnmappedFiles(superseded_ns) : std::vector<ReleasedFile>{};
  }
  // On the recording thread.
  TrackedState tracked_state() const;
  // The JVMs' metadata now (TrackedState::jvm takes it before the agent
  // empties the method table at an interval's end).
  JvmMemory jvm_memory() const { return jvm_ ? jvm_->Memory() : JvmMemory{}; }
  const RecordSummary& summary() const { return summary_; }
  // The walks finished late so far (on the recording thread).
  DeferredStats deferred_stats() const { return deferred_ ? deferred_->stats() : DeferredStats{}; }
  // The BPF counters (enum ehp_stat) now, while recording.
  std::vector<uint64_t> LiveBpfStats() const {
    return session_ ? session_->ReadStats() : std::vector<uint64_t>(EHP_STAT_COUNT, 0);
  }
  // The sink's new warnings to stderr, each distinct one once and at most
  // 50 in all; `last`: then how many more were not shown. Run reports as it
  // goes; the command calls it last once what it does after Run is done.
  void ReportWarnings(bool last = false);
  Warnings* warnings() const { return warnings_; }

 private:
  // The steps of Run.
  absl::Status StartSession();  // BPF session, table store and cache, tracker
  absl::Status ReleaseCommand();
  void Loop(EventSource& events, uint64_t start, uint64_t deadline);  // until an end
  void FinishSummary();
  // The held samples' last chance at the end: the table builds they wait
  // for are given a few seconds, then every sample left goes out.
  void FinishDeferred();
  // A sample the event handler accepted: counted into the summary.
  void CountSample(const RawSample& s, size_t size);
  // The recorder's part in handling events (agent/record/event_handler.h).
  EventHandler::Hooks EventHooks();
  void ProcessPending(uint64_t now_ns);
  absl::Status LaunchCommand();
  absl::Status AddInitialTargets(uint64_t now_ns);
  void PrintStatus(uint64_t now_ns, bool final_line);
  void PrefetchCommandTables();
  // The vDSO's table, built first and kept for every process.
  void PrefetchVdso();
  // Reads the processes running at start (agent/record/recorder_start.cc).
  void ReadInitialProcesses(std::vector<uint32_t> pids, uint64_t now_ns);
  // Finished table builds into the maps, and the entries using them rewritten.
  void LoadFinishedTables();
  // A sample stopped at "table not loaded yet": its file's build goes first.
  void HurryTableOf(const RawSample& s);
  // The files of processes that exec'd since the last call go ahead of
  // the queue (their maps were read since).
  void HurryExecedTables(uint64_t now_ns);
  // Until the tables of the files the processes running at start map are
  // loaded (at most RecordOptions::start_wait_ms), handling events; samples meanwhile are
  // left out, as ehprof's set-up's are.
  void WaitForStartTables(EventSource& events);
  // The command's processes' exec'd binaries, remembered for next time.
  void NoteExec(uint32_t pid);
  void SaveExecHints();

  RecordOptions options_;
  Warnings* warnings_;
  std::unique_ptr<SamplingSession> session_;
  std::unique_ptr<MapWriter> targets_;  // the BPF targets map
  std::unique_ptr<TableStore> store_;
  std::unique_ptr<KernelFileIndex> kernel_index_;
  std::unique_ptr<FileTables> files_;
  std::unique_ptr<ProcessTracker> tracker_;
  std::unique_ptr<PythonTracker> python_;
  std::unique_ptr<JvmTracker> jvm_;
  std::unique_ptr<V8Tracker> v8_;
  InterpFrameTable interp_frames_;
  std::vector<std::unique_ptr<InterpTracker>> interps_;
  // The trackers as the event handler and TrackProcess take them.
  RuntimeTrackers Runtimes() const;
  SampleList list_;
  SampleSink* sink_;
  std::vector<std::string> NewWarnings();

  std::unique_ptr<EventHandler> events_;
  // Samples held to be finished late (null: --defer-budget 0).
  std::unique_ptr<DeferredWalks> deferred_;
  std::set<uint32_t> followed_;
  uint64_t warnings_shown_ = 0, warnings_suppressed_ = 0;
  std::vector<FileKey> prefetched_;
  std::set<FileKey> start_files_;  // mapped by the processes running at start
  std::set<uint32_t> execed_;      // exec'd since HurryExecedTables last ran
  // The command's executable and what its processes exec'd (exec hints
  // for the next recording of it, agent/record/exec_hints.h).
  std::string command_exe_;
  std::set<std::string> execs_seen_;
  RecordSummary summary_;
  int child_pid_ = -1;
  // The command's process before its exec runs ehprof's own code (and
  // waits for the release, off the CPU) under ehprof's name: not the
  // profile's, as perf's enable_on_exec leaves it out too.
  bool command_execd_ = false;
  std::string own_comm_;
  UniqueFd child_go_fd_;     // closing it lets the child exec
  UniqueFd child_error_fd_;  // the child writes errno here if exec fails
  uint64_t complete_ = 0;    // samples whose user walk reached the bottom
  uint64_t sample_count_ = 0;
  uint64_t interp_off_count_ = 0;  // of them, EHP_SAMPLE_INTERP_OFF
  uint64_t record_from_ns_ = 0;  // -D: earlier samples are left out
  bool sampler_held_ = false;    // -D: the sampler counts from record_from_ns_
  std::mt19937_64 reservoir_rng_{12345};
  uint64_t last_status_ns_ = 0;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_RECORDER_H_
