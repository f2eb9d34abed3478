#include "agent/record/recorder.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/process/exec_closure.h"
#include "agent/record/targets_map.h"
#include "base/scoped_handle.h"
#include "base/sigbus_guard.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

Recorder::~Recorder() {
  if (child_pid_ > 0 && summary_.command_exit < 0) {
    // Never leave the command blocked before exec or running unobserved.
    ::kill(child_pid_, SIGKILL);
    ::waitpid(child_pid_, nullptr, 0);
  }
  // Tracker and tables before the session whose maps they write.
  events_.reset();
  deferred_.reset();
  jvm_.reset();
  v8_.reset();
  python_.reset();
  interps_.clear();
  tracker_.reset();
  files_.reset();
  kernel_index_.reset();
  store_.reset();
  targets_.reset();
  session_.reset();
}

RuntimeTrackers Recorder::Runtimes() const {
  RuntimeTrackers r{python_.get(), jvm_.get(), v8_.get(), {}};
  for (const auto& t : interps_) r.interps.push_back(t.get());
  return r;
}

absl::Status Recorder::AddInitialTargets(uint64_t now_ns) {
  MapWriter& targets = *targets_;
  for (uint32_t pid : options_.pids) {
    if (!ProcessExists(pid)) return absl::NotFoundError(absl::StrCat("no process with pid ", pid));
    if (absl::Status s = AddTarget(targets, pid, EHP_TARGET_PROCESS); !s.ok()) return s;
    followed_.insert(pid);
  }
  for (uint32_t tid : options_.tids) {
    auto tgid = TgidOf(tid);
    if (!tgid) return absl::NotFoundError(absl::StrCat("no thread with tid ", tid));
    if (absl::Status s = AddTarget(targets, tid, EHP_TARGET_THREAD); !s.ok()) return s;
    followed_.insert(*tgid);
  }
  if (child_pid_ > 0) {
    absl::Status s = AddTarget(targets, static_cast<uint32_t>(child_pid_), EHP_TARGET_PROCESS);
    if (!s.ok()) return s;
    // Its mappings are read after exec (the EXEC event): until then it is a
    // copy of ehprof.
  }
  if (options_.all && child_pid_ <= 0) PrefetchVdso();  // a command's prefetch has it
  ReadInitialProcesses(options_.all ? AllPids() : std::vector<uint32_t>(followed_.begin(), followed_.end()),
                       now_ns);
  return absl::OkStatus();
}

void Recorder::CountSample(const RawSample& s, size_t size) {
  summary_.off_cpu_ns += s.off_cpu_ns;
  if (s.stop_reason == EHP_STOP_END_OF_STACK) ++complete_;
  if (s.stop_reason != EHP_STOP_NOT_WALKED && s.stop_reason != EHP_STOP_NO_USER_STACK) {
    ++summary_.user_walked;
    ++summary_.stop_reasons[s.stop_reason];
  }
  summary_.ring_bytes += size;
  const bool interp_off = s.flags & EHP_SAMPLE_INTERP_OFF;
  std::vector<uint32_t>& ns = interp_off ? summary_.bpf_ns_interp_off : summary_.bpf_ns;
  const uint64_t seen = interp_off ? interp_off_count_ : sample_count_ - interp_off_count_;
  if (ns.size() < RecordSummary::kBpfNsReservoir) {
    ns.push_back(s.bpf_ns);
  } else if (uint64_t j = reservoir_rng_() % (seen + 1); j < RecordSummary::kBpfNsReservoir) {
    ns[j] = s.bpf_ns;
  }
  interp_off_count_ += interp_off;
  ++sample_count_;
}

EventHandler::Hooks Recorder::EventHooks() {
  EventHandler::Hooks h;
  h.accept = [this](const RawSample& s) {
    if (s.time_ns < record_from_ns_) {  // -D, or the start waiting for tables
      HurryTableOf(s);
      return false;
    }
    // The name too, in case the EXEC event was lost to a full ring buffer.
    if (static_cast<int>(s.pid) == child_pid_ && !command_execd_ && own_comm_ == s.comm) return false;
    // Before the sample is held for its walk to be finished late
    // (agent/deferred/): that waits for this table.
    HurryTableOf(s);
    return true;
  };
  h.count = [this](const RawSample& s, size_t size) { CountSample(s, size); };
  h.exec = [this](uint32_t pid) {
    if (static_cast<int>(pid) == child_pid_) command_execd_ = true;
    NoteExec(pid);
    execed_.insert(pid);
  };
  h.exited = [this](uint32_t pid) {
    if (!options_.all) targets_->Delete(pid);
  };
  return h;
}

void Recorder::ProcessPending(uint64_t now_ns) {
  events_->ProcessPending(now_ns);
  HurryExecedTables(now_ns);
  LoadFinishedTables();
  events_->RetryDeferred(now_ns, /*final=*/false);
  ReportWarnings();
}

void Recorder::FinishDeferred() {
  if (!deferred_) return;
  // A held sample waits for a table being built: the builder thread gets
  // up to kWaitNs to finish what is queued.
  constexpr uint64_t kWaitNs = 10'000'000'000ull;
  const uint64_t until = NowNs() + kWaitNs;
  while (deferred_->held() > 0 && files_->pending() > 0 && NowNs() < until) {
    ::usleep(50'000);
    LoadFinishedTables();
    events_->RetryDeferred(NowNs(), /*final=*/false);
  }
  LoadFinishedTables();
  events_->RetryDeferred(NowNs(), /*final=*/true);
}

absl::Status Recorder::Run() {
  if (!options_.command.empty()) {
    if (absl::Status st = LaunchCommand(); !st.ok()) return st;
  }
  if (absl::Status st = StartSession(); !st.ok()) return st;
  if (child_pid_ > 0) PrefetchCommandTables();
  uint64_t start = NowNs();
  if (absl::Status st = AddInitialTargets(start); !st.ok()) return st;
  auto events = session_->OpenEvents([this](const void* data, size_t size) { events_->Handle(data, size); });
  if (!events.ok()) return events.status();
  if (absl::Status st = ReleaseCommand(); !st.ok()) return st;
  if (child_pid_ <= 0 && !start_files_.empty()) {
    WaitForStartTables(**events);
    start = NowNs();
  }
  // -D only: a sample stamped before now is still the recording's (an
  // off-CPU block is stamped when it began, maybe before the release
  // returned here).
  if (options_.delay_ms > 0) {
    record_from_ns_ = NowNs() + static_cast<uint64_t>(options_.delay_ms * 1e6);
    sampler_held_ = options_.sample_cpu;
  }

  summary_.setup_cpu_ns = CpuTimeNs();
  const uint64_t deadline = options_.duration_s > 0
                                ? start + static_cast<uint64_t>(options_.duration_s * 1e9)
                                : UINT64_MAX;
  Loop(**events, start, deadline);
  // The recording is over: no more sampling interrupts on any CPU while
  // it is resolved and written.
  if (absl::Status s = session_->SetSampling(false); !s.ok()) warnings_->Add(std::string(s.message()));
  // Samples still in the ring buffer belong to the recording.
  (*events)->Drain();
  ProcessPending(NowNs());
  FinishDeferred();
  PrintStatus(NowNs(), true);
  FinishSummary();
  SaveExecHints();
  return absl::OkStatus();
}

absl::Status Recorder::StartSession() {
  absl::StatusOr<SessionOptions> so = SessionOptionsFor(options_);
  if (!so.ok()) return so.status();
  summary_.walk_budget_ns = so->config.walk_budget_ns;
  if (!options_.start_session) return absl::InternalError("record: no way to start the BPF session was given");
  auto session = options_.start_session(*so);
  if (!session.ok()) return session.status();
  session_ = std::move(*session);
  targets_ = session_->TargetsMap();
  store_ = std::make_unique<TableStore>(session_->UnwindTableMaps(), options_.sizes);
  std::unique_ptr<TableCache> cache;
  if (!options_.table_cache_dir.empty()) {
    auto c = TableCache::Open(options_.table_cache_dir, options_.table_cache_bytes);
    if (c.ok()) {
      cache = std::make_unique<TableCache>(*std::move(c));
    } else if (options_.table_cache_explicit || geteuid() == 0) {
      warnings_->Add(absl::StrCat(c.status().message(), " (tables are built every run)"));
    }
  }
  files_ = std::make_unique<FileTables>(store_.get(), warnings_, std::move(cache));
  if (options_.kernel_maps) {
    kernel_index_ = std::make_unique<KernelFileIndex>(session_->FileIndex());
    files_->SetUnloadHook([index = kernel_index_.get()](const FileKey& key) { index->Unpublish(key); });
  }
  tracker_ = std::make_unique<ProcessTracker>(files_.get(), session_->ProcsMap(), warnings_);
  tracker_->SetKernelIndex(kernel_index_.get());
  if (options_.python && options_.user) {
    python_ = std::make_unique<PythonTracker>(session_->PythonProcsMap(), warnings_);
  }
  if (options_.jvm && options_.user) jvm_ = std::make_unique<JvmTracker>(session_->JvmProcsMap(), warnings_);
  if (options_.v8 && options_.user) v8_ = std::make_unique<V8Tracker>(session_->V8ProcsMap(), warnings_);
  if (options_.user) {
    interps_ = MakeInterpTrackers(
        options_.interps, [&](ehp_interp_kind kind) { return session_->InterpProcsMap(kind); }, &interp_frames_,
        warnings_);
  }
  events_ = std::make_unique<EventHandler>(tracker_.get(), sink_, Runtimes(), warnings_, EventHooks());
  if (so->config.deferred_rate) {
    DeferredWalks::Options d;
    d.max_hold_ns = options_.deferred_max_hold_ns;
    d.max_bytes = options_.deferred_max_bytes;
    deferred_ = std::make_unique<DeferredWalks>(tracker_.get(), files_.get(), session_->UnwindTableMaps(), d);
    deferred_->SetInterpreterLoops([this](uint32_t pid, uint64_t pc) {
      if (python_ && python_->InInterpreterLoop(pid, pc)) return true;
      return std::any_of(interps_.begin(), interps_.end(),
                         [&](const std::unique_ptr<InterpTracker>& t) { return t->InInterpreterLoop(pid, pc); });
    });
    events_->SetDeferred(deferred_.get());
  }
  return absl::OkStatus();
}

// Lets the command exec (the session is attached); its exec error, if any,
// ends the recording before it starts.
absl::Status Recorder::ReleaseCommand() {
  if (child_pid_ <= 0) return absl::OkStatus();
  child_go_fd_.reset();
  int e = 0;
  ssize_t got;
  while ((got = ::read(child_error_fd_.get(), &e, sizeof(e))) < 0 && errno == EINTR) {
  }
  if (got == sizeof(e)) {
    summary_.command_error = absl::StrCat("cannot run ", options_.command[0], ": ", std::strerror(e));
    ::waitpid(child_pid_, nullptr, 0);
    summary_.command_exit = 127;
    return absl::FailedPreconditionError(summary_.command_error);
  }
  return absl::OkStatus();
}

void Recorder::Loop(EventSource& events, uint64_t start, uint64_t deadline) {
  for (;;) {
    int timeout_ms = 100;
    if (const uint64_t due = events_->next_followup_ns(); due != UINT64_MAX) {
      const uint64_t now = NowNs();
      timeout_ms = due <= now ? 0 : static_cast<int>(std::min<uint64_t>(100, (due - now) / 1000000 + 1));
    }
    if (sampler_held_) {
      const uint64_t now = NowNs();
      timeout_ms = std::min<int>(timeout_ms, now >= record_from_ns_ ? 0 : (record_from_ns_ - now) / 1000000 + 1);
    }
    const int n = events.Poll(timeout_ms);
    const uint64_t now = NowNs();
    if (sampler_held_ && now >= record_from_ns_) {
      // -D over: the sampling events count from here.
      sampler_held_ = false;
      if (absl::Status s = session_->SetSampling(true); !s.ok()) warnings_->Add(std::string(s.message()));
    }
    summary_.seconds = (now - start) / 1e9;
    if (n < 0 && n != -EINTR) {
      warnings_->Add(absl::StrCat("ring buffer poll: ", std::strerror(-n)));
    }
    ProcessPending(now);
    if (options_.on_tick) options_.on_tick(now);
    PrintStatus(now, false);
    if (int sig = g_stop_signal.load()) {
      summary_.ended_by = SignalName(sig);
      if (child_pid_ > 0 && summary_.command_exit < 0 && sig != SIGINT) ::kill(child_pid_, sig);
      break;
    }
    if (now >= deadline) {
      summary_.ended_by = "duration";
      break;
    }
    if (child_pid_ > 0) {
      int status;
      if (::waitpid(child_pid_, &status, WNOHANG) == child_pid_) {
        summary_.command_exit = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        summary_.ended_by = "command exit";
        break;
      }
    } else if (!options_.all && !followed_.empty()) {
      bool any = false;
      for (uint32_t pid : followed_) any = any || ProcessExists(pid);
      if (!any) {
        summary_.ended_by = "all processes exited";
        break;
      }
    }
  }
}

void Recorder::FinishSummary() {
  std::vector<uint64_t> stats = session_->ReadStats();
  summary_.samples = sample_count_;
  summary_.ringbuf_drops = stats[EHP_STAT_RINGBUF_DROPS];
  summary_.event_drops = stats[EHP_STAT_EVENT_DROPS];
  summary_.off_cpu_untracked = stats[EHP_STAT_OFFCPU_UNTRACKED];
  summary_.off_cpu_unseen = stats[EHP_STAT_OFFCPU_UNSEEN];
  summary_.walks_cut = stats[EHP_STAT_BUDGET_CUTS];
  summary_.deferred_sent = stats[EHP_STAT_DEFERRED_SENT];
  summary_.deferred_budget_drops = stats[EHP_STAT_DEFERRED_BUDGET];
  if (deferred_) summary_.deferred = deferred_->stats();
  summary_.prog = session_->SampleProgStats();
  summary_.cpu_time_ns = CpuTimeNs() - summary_.setup_cpu_ns;
  summary_.tables = files_->stats();
  summary_.procs_refused = tracker_->procs_refused();
  summary_.remembered = tracker_->history_size();
  summary_.kept_files = tracker_->kept_files();
  if (jvm_) summary_.jvm = jvm_->Memory();
}

// The warnings not yet seen, each distinct one once over the whole
// recording. Past the sink's cap nothing more is remembered for
// deduplication, only counted (see Warnings).
std::vector<std::string> Recorder::NewWarnings() {
  // Process-wide: whichever thread met the truncated file.
  warnings_->AddAll(TakeSigbusGuardWarnings());
  warnings_suppressed_ += warnings_->TakeDropped();
  return warnings_->Take();
}

}  // namespace ehprof
