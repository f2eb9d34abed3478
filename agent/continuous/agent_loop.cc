#include "agent/continuous/agent_loop.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>


#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/continuous/metrics_server.h"
#include "base/guarded.h"
#include "base/printable_text.h"

namespace ehprof {
namespace {

uint64_t Clock(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return uint64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

}  // namespace

uint64_t ResidentBytes() {
  std::ifstream f("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  f >> size >> resident;
  return resident * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
}

std::string MemoryLine(const AgentCounters& c, const MemoryBreakdown& m) {
  const auto mb = [](uint64_t b) { return b / 1e6; };
  std::string largest;
  for (const auto& [path, bytes] : c.symbols.largest) {
    absl::StrAppend(&largest, largest.empty() ? "; largest: " : ", ", path.substr(path.rfind('/') + 1),
                    absl::StrFormat(" %.1f MB", mb(bytes)));
  }
  return absl::StrFormat(
      "RSS %.1f MB = heap in use %.1f MB (symbols %.1f MB in %zu files, address cache %.1f MB of %zu, "
      "interval %.1f MB + resolved %.1f MB%s) + heap free/stacks %.1f MB + ring buffer %.1f MB + code "
      "and mapped files %.1f MB; evicted %llu files (%.1f MB)%s",
      mb(m.rss), mb(m.heap_in_use), mb(c.symbols.symbol_bytes), c.symbols.files,
      mb(c.symbols.address_bytes), c.symbols.addresses, mb(c.interval_bytes), mb(c.output_bytes),
      c.state.jvm.jvms ? absl::StrFormat(", JVM metadata %.1f MB of %zu JVMs", mb(c.state.jvm.total()),
                                         c.state.jvm.live_jvms)
                       : std::string(),
      mb(m.heap_free), mb(m.ring_buffer), mb(m.files),
      static_cast<unsigned long long>(c.files_evicted), mb(c.bytes_evicted), largest);
}

std::string MemoryMetrics(const AgentCounters& c) {
  const MemoryBreakdown m = ReadMemoryBreakdown();
  std::string out = PromMetric("ehprof_resident_memory_bytes", "gauge", "Resident memory of the agent.",
                               static_cast<double>(m.rss));
  const std::pair<const char*, uint64_t> parts[] = {
      {"heap_in_use", m.heap_in_use},       {"heap_free", m.heap_free},
      {"ring_buffer", m.ring_buffer},       {"mapped_files", m.files},
      {"symbols", c.symbols.symbol_bytes},  {"address_cache", c.symbols.address_bytes},
      {"interval", c.interval_bytes},       {"resolved_interval", c.output_bytes},
      {"jvm_metadata", c.state.jvm.total()}};
  std::vector<std::pair<std::string, double>> samples;
  for (const auto& [part, bytes] : parts) {
    samples.emplace_back(absl::StrCat("part=\"", part, "\""), static_cast<double>(bytes));
  }
  out += PromFamily("ehprof_memory_bytes", "gauge",
                    "Resident memory by part (symbols, address_cache, interval, resolved_interval and "
                    "jvm_metadata are inside heap_in_use).",
                    samples);
  out += PromMetric("ehprof_symbol_files", "gauge", "Files whose symbol data is loaded.",
                    static_cast<double>(c.symbols.files));
  out += PromMetric("ehprof_symbol_files_evicted_total", "counter",
                    "Files whose symbol data was evicted to stay within --memory-limit (least recently "
                    "used first).",
                    static_cast<double>(c.files_evicted));
  return out;
}

AgentLoop::AgentLoop(AgentOptions options)
    : options_(std::move(options)),
      services_("/proc", options_.max_services, options_.cgroup_labels, options_.service_name),
      containers_(options_.container_storage),
      placeholder_(::open("/dev/null", O_RDONLY | O_CLOEXEC)) {
  worker_ = std::thread([this] { Worker(); });
}

AgentLoop::~AgentLoop() {
  {
    MutexLock lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

AgentCounters AgentLoop::counters() const {
  MutexLock lock(mu_);
  AgentCounters c = counters_;
  c.samples_lost = lost_.load();
  c.walks_cut = walks_cut_.load();
  c.walks_finished_late = finished_late_.load();
  c.deferred_budget_drops = deferred_budget_drops_.load();
  return c;
}

void AgentLoop::Add(RawSample&& s, const ProcessTracker& tracker) {
  if (s.stop_reason < EHP_STOP_REASON_COUNT) ++stops_[s.stop_reason];
  const std::string& service = services_.Of(s.pid, s.comm);
  aggregator_.Add(s, tracker, service, recorder_ ? recorder_->python_codes() : nullptr,
                  recorder_ ? recorder_->jvm_methods() : nullptr, recorder_ ? recorder_->v8_functions() : nullptr,
                  recorder_ ? recorder_->interp_frames() : nullptr);
}

void AgentLoop::OnTick(uint64_t now_ns) {
  if (options_.on_tick) options_.on_tick();
  if (recorder_ && now_ns >= next_stats_ns_) {
    const std::vector<uint64_t> bpf = recorder_->LiveBpfStats();
    lost_.store(bpf[EHP_STAT_RINGBUF_DROPS]);
    walks_cut_.store(bpf[EHP_STAT_BUDGET_CUTS]);
    deferred_budget_drops_.store(bpf[EHP_STAT_DEFERRED_BUDGET]);
    finished_late_.store(recorder_->deferred_stats().finished);
    next_stats_ns_ = now_ns + 1000000000ull;
  }
  if (next_end_ns_ == 0) {
    next_end_ns_ = now_ns + static_cast<uint64_t>(options_.interval_s * 1e9);
    next_log_ns_ = now_ns + static_cast<uint64_t>(options_.log_every_s * 1e9);
  }
  if (now_ns >= next_end_ns_) {
    HandOver(now_ns);
    next_end_ns_ += static_cast<uint64_t>(options_.interval_s * 1e9);
    if (next_end_ns_ <= now_ns) next_end_ns_ = now_ns + static_cast<uint64_t>(options_.interval_s * 1e9);
  }
  if (options_.log_every_s > 0 && now_ns >= next_log_ns_) {
    LogMetrics(now_ns);
    next_log_ns_ = now_ns + static_cast<uint64_t>(options_.log_every_s * 1e9);
  }
}

void AgentLoop::HandOver(uint64_t now_ns) {
  // Frames still in no mapping are located again: the maps their samples
  // asked for have been read since.
  IntervalProfile p = aggregator_.Take(now_ns, recorder_ ? recorder_->tracker() : nullptr);
  TrackedState state;
  if (recorder_) {
    const JvmMemory jvm = recorder_->jvm_memory();
    // Its Python frames are named: the code objects go with the interval.
    recorder_->ForgetPythonCodes();
    recorder_->ForgetJvmMethods();
    recorder_->ForgetV8Functions();
    recorder_->ForgetInterpFrames();
    // Its frames are located: files no process maps now go with it too.
    // Snapshots replaced before the previous interval ended are kept no
    // longer (a sample arriving late was taken after that).
    p.released = recorder_->ReleaseUnmappedFiles(p.start_ns);
    state = recorder_->tracked_state();
    state.jvm = jvm;
  }
  const size_t services = services_.services();
  const uint64_t overflowed = services_.overflowed();
  if (overflowed > 0 && !said_overflow_) {
    said_overflow_ = true;
    std::fprintf(stderr,
                 "ehprof agent: warning: more than %zu services had samples in one interval: the "
                 "processes of the others are counted as service %s (--max-services)\n",
                 options_.max_services, ServiceNames::kOverflow);
  }
  services_.Prune();
  {
    MutexLock lock(mu_);
    counters_.services = services;
    counters_.services_overflowed = overflowed;
    std::copy(std::begin(stops_), std::end(stops_), std::begin(counters_.walk_stops));
    counters_.samples += p.samples;
    counters_.stacks_dropped += p.dropped;
    counters_.state = state;
    if (queue_.size() >= kMaxQueued) {
      // Its released fds are closed after the next one instead: until the
      // symbolizer has forgotten their paths, their numbers must not be
      // given to other files. Nothing symbolizes their files now: each fd
      // is made /dev/null's meanwhile (a stalled worker must not keep
      // deleted files' space; the interval it is on may lose those files'
      // names, never get another file's).
      std::vector<ReleasedFile> released = std::move(queue_.front().released);
      queue_.pop_front();
      for (ReleasedFile& f : released) {
        if (placeholder_.valid()) ::dup3(placeholder_.get(), f.fd.get(), O_CLOEXEC);
      }
      auto& next = queue_.empty() ? p.released : queue_.front().released;
      std::move(released.begin(), released.end(), std::back_inserter(next));
      ++counters_.intervals_dropped;
    }
    queue_.push_back(std::move(p));
  }
  cv_.notify_all();
}

void AgentLoop::LogMetrics(uint64_t now_ns) {
  const AgentCounters c = counters();
  size_t queued;
  {
    MutexLock lock(mu_);
    queued = queue_.size();
  }
  std::fprintf(stderr,
               "ehprof agent: samples %llu, lost %llu, intervals %llu (dropped %llu), queued %zu, "
               "%s, CPU %.1f s%s\n",
               static_cast<unsigned long long>(c.samples),
               static_cast<unsigned long long>(c.samples_lost),
               static_cast<unsigned long long>(c.intervals),
               static_cast<unsigned long long>(c.intervals_dropped), queued,
               MemoryLine(c, ReadMemoryBreakdown()).c_str(), (CpuTimeNs() - started_cpu_ns_) / 1e9,
               options_.extra_metrics ? options_.extra_metrics().c_str() : "");
  (void)now_ns;
}

void AgentLoop::Worker() {
  IntervalSymbolizer symbolizer(options_.symbols, &warnings_);
  for (;;) {
    IntervalProfile p;
    {
      MutexLock lock(mu_);
      lock.Wait(cv_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;  // done, and nothing left
      p = std::move(queue_.front());
      queue_.pop_front();
    }
    std::vector<ReleasedFile> released = std::move(p.released);
    // An exception while resolving or exporting one interval costs that
    // interval (counted as dropped), not the agent.
    const absl::Status st = Guarded("the interval worker", "that interval is dropped", [&] {
      Export(symbolizer, p);
      return absl::OkStatus();
    });
    if (!st.ok()) {
      MutexLock lock(mu_);
      ++counters_.intervals_dropped;
    }
    // Whatever the symbolizer keeps under a released fd's path goes before
    // the fd closes (the number may name another file next), whether the
    // interval was exported or not.
    (void)Guarded("the interval worker", "its released files are closed", [&] {
      for (const ReleasedFile& f : released) symbolizer.Forget(f.path);
      return absl::OkStatus();
    });
    released.clear();
  }
}

void AgentLoop::Export(IntervalSymbolizer& symbolizer, IntervalProfile& p) {
  IntervalOutput out;
  // Sample times are CLOCK_MONOTONIC; the profile says when in real time.
  const uint64_t mono = Clock(CLOCK_MONOTONIC), real = Clock(CLOCK_REALTIME);
  const uint64_t start = p.start_ns != 0 ? p.start_ns : p.end_ns;
  out.start_unix_ns = real - (mono - start);
  out.duration_ns = p.end_ns > start ? p.end_ns - start : 0;
  out.frequency_hz = options_.record.frequency_hz;
  out.samples = p.samples;
  if (absl::Status st = containers_.Refresh(); !st.ok()) {
    warnings_.AddOnce("container names", absl::StrCat("containers go unnamed: ", st.message()));
  }
  symbolizer.Resolve(p, &out, [this](const std::string& service) { return containers_.Of(service); });
  for (const LocatedMapping& m : p.mappings) {
    // Keyed as the profile names the file (ProfileBuilder::String).
    if (!m.build_id.empty()) out.build_ids.emplace(PrintableText(m.path), m.build_id);
  }
  const uint64_t output_bytes = out.profile.Bytes();
  if (options_.sink) options_.sink(out);
  out = IntervalOutput();
  const uint64_t interval_bytes = p.Bytes();
  p = IntervalProfile();
  // The interval's buffers are freed: give them back before judging RSS.
  ReturnFreedMemory();
  std::pair<size_t, uint64_t> evicted{0, 0};
  const uint64_t rss = ResidentBytes();
  if (options_.memory_limit_bytes != 0 && rss > options_.memory_limit_bytes) {
    evicted = symbolizer.EvictFor(rss - options_.memory_limit_bytes);
    ReturnFreedMemory();
    if (evicted.first > 0) {
      std::fprintf(stderr,
                   "ehprof agent: RSS %.1f MB over --memory-limit %.0f MB: evicted the symbol data "
                   "of %zu least recently used files (%.1f MB), now %.1f MB\n",
                   rss / 1e6, options_.memory_limit_bytes / 1048576.0, evicted.first,
                   evicted.second / 1e6, ResidentBytes() / 1e6);
    }
  }
  MutexLock lock(mu_);
  ++counters_.intervals;
  counters_.files_evicted += evicted.first;
  counters_.bytes_evicted += evicted.second;
  counters_.symbols = symbolizer.usage();
  counters_.interval_bytes = interval_bytes;
  counters_.output_bytes = output_bytes;
}

absl::Status AgentLoop::Run() {
  RecordOptions ro = options_.record;
  ro.duration_s = 0;
  ro.sink = this;
  ro.on_tick = [this](uint64_t now) { OnTick(now); };
  started_cpu_ns_ = CpuTimeNs();
  Recorder rec(std::move(ro), &warnings_);
  recorder_ = &rec;
  absl::Status st = rec.Run();
  // The counters as the recording ended (OnTick refreshes them each second).
  finished_late_.store(rec.deferred_stats().finished);
  deferred_budget_drops_.store(rec.summary().deferred_budget_drops);
  // The last, partial interval, unless it caught no sample: stopped just
  // after a boundary it may be a few ms long, and an empty profile is
  // nothing to write or push.
  if (aggregator_.pending_samples() > 0) HandOver(Clock(CLOCK_MONOTONIC));
  rec.ReportWarnings(/*last=*/true);
  recorder_ = nullptr;
  {
    MutexLock lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  return st;
}

}  // namespace ehprof
