#include "agent/continuous/agent_loop.h"

#include <time.h>
#include <unistd.h>

#include <malloc.h>

#include <cstdio>
#include <fstream>

#include "absl/strings/str_format.h"

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

AgentLoop::AgentLoop(AgentOptions options) : options_(std::move(options)) {
  worker_ = std::thread([this] { Worker(); });
}

AgentLoop::~AgentLoop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

AgentCounters AgentLoop::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  AgentCounters c = counters_;
  c.samples_lost = lost_.load();
  return c;
}

void AgentLoop::OnSample(RawSample&& s, const ProcessTracker& tracker) {
  const std::string& service =
      options_.service_name.empty() ? services_.Of(s.pid, s.comm) : options_.service_name;
  aggregator_.Add(s, tracker, service);
}

void AgentLoop::OnTick(uint64_t now_ns) {
  if (options_.on_tick) options_.on_tick();
  if (recorder_ && now_ns >= next_stats_ns_) {
    const std::vector<uint64_t> bpf = recorder_->LiveBpfStats();
    lost_.store(bpf[EHP_STAT_RINGBUF_DROPS]);
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
  IntervalProfile p = aggregator_.Take(now_ns);
  services_.Prune();
  {
    std::lock_guard<std::mutex> lock(mu_);
    counters_.samples += p.samples;
    counters_.stacks_dropped += p.dropped;
    if (queue_.size() >= kMaxQueued) {
      queue_.pop_front();
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
    std::lock_guard<std::mutex> lock(mu_);
    queued = queue_.size();
  }
  std::fprintf(stderr,
               "ehprof agent: samples %llu, lost %llu, intervals %llu (dropped %llu), queued %zu, "
               "RSS %.1f MB (caches dropped %llu times), CPU %.1f s%s\n",
               static_cast<unsigned long long>(c.samples),
               static_cast<unsigned long long>(c.samples_lost),
               static_cast<unsigned long long>(c.intervals),
               static_cast<unsigned long long>(c.intervals_dropped), queued, ResidentBytes() / 1e6,
               static_cast<unsigned long long>(c.cache_resets),
               (CpuTimeNs() - started_cpu_ns_) / 1e9,
               options_.extra_metrics ? options_.extra_metrics().c_str() : "");
  (void)now_ns;
}

void AgentLoop::Worker() {
  IntervalSymbolizer symbolizer(options_.symbols);
  for (;;) {
    IntervalProfile p;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return done_ || !queue_.empty(); });
      if (queue_.empty()) return;  // done, and nothing left
      p = std::move(queue_.front());
      queue_.pop_front();
    }
    IntervalOutput out;
    // Sample times are CLOCK_MONOTONIC; the profile says when in real time.
    const uint64_t mono = Clock(CLOCK_MONOTONIC), real = Clock(CLOCK_REALTIME);
    const uint64_t start = p.start_ns != 0 ? p.start_ns : p.end_ns;
    out.start_unix_ns = real - (mono - start);
    out.duration_ns = p.end_ns > start ? p.end_ns - start : 0;
    out.frequency_hz = options_.record.frequency_hz;
    out.samples = p.samples;
    out.by_service = symbolizer.Resolve(p);
    for (const LocatedMapping& m : p.mappings) {
      if (!m.build_id.empty()) out.build_ids.emplace(m.path, m.build_id);
    }
    for (const std::string& w : symbolizer.TakeWarnings()) {
      std::fprintf(stderr, "ehprof agent: warning: %s\n", w.c_str());
    }
    if (options_.sink) options_.sink(out);
    out = IntervalOutput();
    p = IntervalProfile();
    bool reset = false;
    if (options_.memory_limit_bytes != 0 && ResidentBytes() > options_.memory_limit_bytes) {
      symbolizer.Reset();
      malloc_trim(0);
      reset = true;
    }
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.intervals;
    counters_.cache_resets += reset;
  }
}

absl::Status AgentLoop::Run() {
  RecordOptions ro = options_.record;
  ro.duration_s = 0;
  ro.on_sample = [this](RawSample&& s, const ProcessTracker& t) { OnSample(std::move(s), t); };
  ro.on_tick = [this](uint64_t now) { OnTick(now); };
  started_cpu_ns_ = CpuTimeNs();
  Recorder rec(std::move(ro));
  recorder_ = &rec;
  absl::Status st = rec.Run();
  // The last, partial interval, unless it caught no sample: stopped just
  // after a boundary it may be a few ms long, and an empty profile is
  // nothing to write or push.
  if (aggregator_.pending_samples() > 0) HandOver(Clock(CLOCK_MONOTONIC));
  for (const std::string& w : rec.TakeWarnings()) {
    std::fprintf(stderr, "ehprof agent: warning: %s\n", w.c_str());
  }
  recorder_ = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_ = true;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
  return st;
}

}  // namespace ehprof
