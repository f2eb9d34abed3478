// `ehprof agent`: continuous profiling of the machine (or of -p PIDs), one
// profile per interval to the sinks.
#include <fcntl.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/cli/cli.h"
#include "agent/continuous/agent_loop.h"
#include "agent/continuous/metrics_server.h"
#include "agent/continuous/output_dir.h"
#include "agent/output/output_pprof.h"
#include "agent/process/process_tracker.h"
#include "agent/process/vdso_file.h"
#include "agent/sink/push_queue.h"
#include "agent/sink/push_request.h"
#include "agent/sink/pyroscope_client.h"

namespace ehprof {
namespace {

constexpr char kHelp[] = R"(usage: ehprof agent [-a | -p PID[,PID...]] SINK... [options]

Profiles continuously until SIGINT or SIGTERM (which write the last,
partial interval), aggregating stacks as they are sampled and writing one
profile per interval. Stacks are unwound in the kernel with CFI, as
`ehprof record` does.

Sinks (at least one):
  --pyroscope URL    Grafana Pyroscope's push API (URL/push.v1.PusherService/
                     Push): one series per service a interval, named
                     process_cpu, labelled service_name and hostname (and
                     --label); a server that is down or slow never stops
                     sampling: pushes queue (--queue N, oldest dropped and
                     counted) and are retried with backoff
  --output-dir DIR   one pprof file (.pb.gz) per interval, the newest --keep
                     kept; each sample is labelled service_name and comm
                     (`go tool pprof -http=: DIR/*.pb.gz`)

Pyroscope options:
  --label K=V        a label of every series (repeatable)
  --tenant ID        X-Scope-OrgID (multi-tenant Pyroscope)
  --basic-auth-user U --basic-auth-password-file FILE
  --bearer-token-file FILE
                     credentials (read from files, never printed)
  --queue N          pushes kept while the server is unreachable (default 60)

Targets:
  -a                 every process (the default)
  -p PID[,PID...]    these processes and their children

Options:
  -F HZ              sampling frequency per CPU (default 99)
  -e EVENT           cpu-clock (default), task-clock, cycles
  --interval S       seconds per profile (default 10)
  --keep N           files kept in --output-dir (default 60)
  --service-name S   service_name of every sample (default: per process,
                     its container or systemd unit from its cgroup, else its
                     executable's name)
  --table-memory MB  memory for unwind tables in BPF maps (default 64)
  --max-procs N      processes with unwind state in the kernel (default 4096)
  --table-cache DIR  built unwind tables kept across runs (default
                     /var/cache/ehprof/tables; --no-table-cache: none)
  --memory-limit MB  above this resident size after an interval, symbol
                     caches are dropped and rebuilt (default 300; 0: never)
  --log FILE         write messages to FILE (reopened on SIGHUP)
  --metrics-every S  a line of self-metrics (samples, lost, intervals, RSS,
                     CPU) this often (default 60; 0: never)
  --metrics-addr IP:PORT
                     the same as a Prometheus scrape target (GET /metrics)
)";

// One push request for an interval: a series per service, its profile the
// service's samples as a gzipped pprof.
std::string PushBody(const IntervalOutput& out, const Labels& common) {
  std::vector<PushSeries> series;
  PprofOptions po;
  po.frequency_hz = out.frequency_hz;
  po.time_nanos = static_cast<int64_t>(out.start_unix_ns);
  po.duration_nanos = static_cast<int64_t>(out.duration_ns);
  for (const auto& [service, samples] : out.by_service) {
    std::ostringstream pprof;
    if (!WritePprof(samples, pprof, po).ok()) continue;
    PushSeries s;
    s.labels = {{"__name__", "process_cpu"}, {"service_name", service}};
    s.labels.insert(s.labels.end(), common.begin(), common.end());
    s.profiles.push_back(pprof.str());
    series.push_back(std::move(s));
  }
  return EncodePushRequest(series);
}

std::string PrometheusText(const AgentCounters& c, const PushQueue::Counters& q, bool pushing,
                           uint64_t cpu_ns) {
  std::string out;
  out += PromMetric("ehprof_samples_total", "counter", "Samples aggregated into intervals.", c.samples);
  out += PromMetric("ehprof_samples_lost_total", "counter", "Samples lost to a full ring buffer.",
                    c.samples_lost);
  out += PromMetric("ehprof_intervals_total", "counter", "Intervals handed to the sinks.", c.intervals);
  out += PromMetric("ehprof_intervals_dropped_total", "counter",
                    "Intervals dropped because symbolization fell behind.", c.intervals_dropped);
  out += PromMetric("ehprof_stacks_dropped_total", "counter",
                    "Samples over the distinct-stack cap of an interval.", c.stacks_dropped);
  if (pushing) {
    out += PromMetric("ehprof_pushes_total", "counter", "Pushes to Pyroscope by outcome.", q.pushed,
                      "result=\"ok\"");
    out += PromMetric("ehprof_push_failed_attempts_total", "counter",
                      "Push attempts that failed (retried when the server may recover).", q.attempts_failed);
    out += PromMetric("ehprof_pushes_refused_total", "counter", "Pushes the server refused (4xx).",
                      q.rejected);
    out += PromMetric("ehprof_pushes_dropped_total", "counter",
                      "Pushes dropped from a full queue (oldest first).", q.dropped);
    out += PromMetric("ehprof_pushes_abandoned_total", "counter",
                      "Pushes given up after 12 failed attempts (about 3 minutes).", q.abandoned);
    out += PromMetric("ehprof_push_queue_depth", "gauge", "Pushes waiting.", static_cast<double>(q.queued));
  }
  out += PromMetric("ehprof_symbol_cache_resets_total", "counter",
                    "Times the symbol caches were dropped to stay under --memory-limit.", c.cache_resets);
  out += PromMetric("ehprof_resident_memory_bytes", "gauge", "Resident memory of the agent.",
                    static_cast<double>(ResidentBytes()));
  out += PromMetric("ehprof_cpu_seconds_total", "counter", "CPU time of the agent since it started.",
                    cpu_ns / 1e9);
  return out;
}

std::atomic<bool> g_reopen_log{false};
void OnHangup(int) { g_reopen_log.store(true); }

bool ReopenLog(const std::string& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return false;
  ::dup2(fd, STDERR_FILENO);
  ::close(fd);
  return true;
}

}  // namespace

int RunAgentCommand(const std::vector<std::string>& args) {
  AgentOptions o;
  o.record.frequency_hz = 99;
  o.record.all = true;
  std::string output_dir, log_path;
  PyroscopeOptions push;
  Labels labels;
  std::string basic_password_file, bearer_file;
  size_t queue_size = 60;
  std::string metrics_addr;
  size_t keep = 60;
  uint64_t table_mb = 64;
  uint32_t max_procs = MapSizes{}.procs;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    std::string v;
    auto value = [&](std::string* out) {
      if (i + 1 >= args.size()) return false;
      *out = args[++i];
      return true;
    };
    if (IsHelpFlag(a)) {
      std::fputs(kHelp, stdout);
      return kExitOk;
    } else if (a == "-a") {
      o.record.all = true;
    } else if (a == "-p") {
      if (!value(&v) || !ParseIdList(v, &o.record.pids)) return UsageError("agent", "-p takes PID[,PID...]");
      o.record.all = false;
    } else if (a == "-F") {
      if (!value(&v) || !absl::SimpleAtoi(v, &o.record.frequency_hz) || o.record.frequency_hz == 0 ||
          o.record.frequency_hz > 100000) {
        return UsageError("agent", "-F takes a frequency in Hz (1..100000)");
      }
    } else if (a == "-e") {
      if (!value(&v)) return UsageError("agent", "-e takes an event");
      if (v == "cpu-clock") {
        o.record.event_type = PERF_TYPE_SOFTWARE;
        o.record.event_config = PERF_COUNT_SW_CPU_CLOCK;
      } else if (v == "task-clock") {
        o.record.event_type = PERF_TYPE_SOFTWARE;
        o.record.event_config = PERF_COUNT_SW_TASK_CLOCK;
      } else if (v == "cycles") {
        o.record.event_type = PERF_TYPE_HARDWARE;
        o.record.event_config = PERF_COUNT_HW_CPU_CYCLES;
      } else {
        return UsageError("agent", absl::StrCat("unknown event ", v, " (cpu-clock, task-clock, cycles)"));
      }
    } else if (a == "--interval") {
      if (!value(&v) || !absl::SimpleAtod(v, &o.interval_s) || o.interval_s < 0.5 || o.interval_s > 3600) {
        return UsageError("agent", "--interval takes seconds (0.5..3600)");
      }
    } else if (a == "--output-dir") {
      if (!value(&output_dir) || output_dir.empty()) return UsageError("agent", "--output-dir takes a directory");
    } else if (a == "--keep") {
      if (!value(&v) || !absl::SimpleAtoi(v, &keep) || keep == 0) return UsageError("agent", "--keep takes a count");
    } else if (a == "--service-name") {
      if (!value(&o.service_name) || o.service_name.empty()) return UsageError("agent", "--service-name takes a name");
    } else if (a == "--table-memory") {
      if (!value(&v) || !absl::SimpleAtoi(v, &table_mb) || table_mb < 1 || table_mb > 65536) {
        return UsageError("agent", "--table-memory takes megabytes (1..65536)");
      }
    } else if (a == "--table-cache") {
      if (!value(&o.record.table_cache_dir) || o.record.table_cache_dir.empty() ||
          o.record.table_cache_dir[0] != '/') {
        return UsageError("agent", "--table-cache takes an absolute directory");
      }
      o.record.table_cache_explicit = true;
    } else if (a == "--no-table-cache") {
      o.record.table_cache_dir.clear();
    } else if (a == "--max-procs") {
      if (!value(&v) || !absl::SimpleAtoi(v, &max_procs) || max_procs < 1 || max_procs > 1 << 20) {
        return UsageError("agent", "--max-procs takes a count (1..1048576)");
      }
    } else if (a == "--pyroscope") {
      if (!value(&push.url) || push.url.empty()) return UsageError("agent", "--pyroscope takes a URL");
    } else if (a == "--label") {
      const size_t eq = i + 1 < args.size() ? args[i + 1].find('=') : std::string::npos;
      if (!value(&v) || eq == std::string::npos || eq == 0) return UsageError("agent", "--label takes K=V");
      labels.emplace_back(v.substr(0, eq), v.substr(eq + 1));
    } else if (a == "--tenant") {
      if (!value(&push.tenant)) return UsageError("agent", "--tenant takes an id");
    } else if (a == "--basic-auth-user") {
      if (!value(&push.basic_user)) return UsageError("agent", "--basic-auth-user takes a name");
    } else if (a == "--basic-auth-password-file") {
      if (!value(&basic_password_file)) return UsageError("agent", "--basic-auth-password-file takes a file");
    } else if (a == "--bearer-token-file") {
      if (!value(&bearer_file)) return UsageError("agent", "--bearer-token-file takes a file");
    } else if (a == "--queue") {
      if (!value(&v) || !absl::SimpleAtoi(v, &queue_size) || queue_size < 1) {
        return UsageError("agent", "--queue takes a count");
      }
    } else if (a == "--metrics-addr") {
      if (!value(&metrics_addr) || metrics_addr.empty()) return UsageError("agent", "--metrics-addr takes IP:PORT");
    } else if (a == "--memory-limit") {
      uint64_t mb = 0;
      if (!value(&v) || !absl::SimpleAtoi(v, &mb)) return UsageError("agent", "--memory-limit takes megabytes");
      o.memory_limit_bytes = mb << 20;
    } else if (a == "--log") {
      if (!value(&log_path) || log_path.empty()) return UsageError("agent", "--log takes a file");
    } else if (a == "--metrics-every") {
      if (!value(&v) || !absl::SimpleAtod(v, &o.log_every_s) || o.log_every_s < 0) {
        return UsageError("agent", "--metrics-every takes seconds");
      }
    } else {
      return UsageError("agent", absl::StrCat("unknown option ", a));
    }
  }
  if (output_dir.empty() && push.url.empty()) {
    return UsageError("agent", "give a sink: --pyroscope URL or --output-dir DIR");
  }
  std::unique_ptr<OutputDir> dir;
  if (!output_dir.empty()) {
    auto d = OutputDir::Open(output_dir, keep);
    if (!d.ok()) {
      std::fprintf(stderr, "ehprof agent: %s\n", std::string(d.status().message()).c_str());
      return kExitFailure;
    }
    dir = std::make_unique<OutputDir>(*std::move(d));
  }
  std::unique_ptr<PyroscopeClient> client;
  std::unique_ptr<PushQueue> queue;
  if (!push.url.empty()) {
    for (const auto& [file, out] : {std::pair{basic_password_file, &push.basic_password},
                                    std::pair{bearer_file, &push.bearer_token}}) {
      if (file.empty()) continue;
      auto secret = ReadSecretFile(file);
      if (!secret.ok()) {
        std::fprintf(stderr, "ehprof agent: %s\n", std::string(secret.status().message()).c_str());
        return kExitFailure;
      }
      *out = *secret;
    }
    char host[256] = {};
    gethostname(host, sizeof(host) - 1);
    Labels check = labels;
    check.emplace_back("__name__", "process_cpu");
    check.emplace_back("service_name", "x");
    check.emplace_back("hostname", host[0] ? host : "unknown");
    if (absl::Status s = ValidateLabels(check); !s.ok()) {
      return UsageError("agent", std::string(s.message()));
    }
    labels.emplace_back("hostname", host[0] ? host : "unknown");
    auto c = PyroscopeClient::Create(push);
    if (!c.ok()) return UsageError("agent", std::string(c.status().message()));
    client = *std::move(c);
    PushQueue::Options qo;
    qo.max_queued = queue_size;
    queue = std::make_unique<PushQueue>(
        [&client](const std::string& body) { return client->Push(body); },
        [](const std::string& line) { std::fprintf(stderr, "ehprof agent: %s\n", line.c_str()); }, qo);
  }
  if (!log_path.empty() && !ReopenLog(log_path)) {
    std::fprintf(stderr, "ehprof agent: cannot open %s\n", log_path.c_str());
    return kExitFailure;
  }
  o.record.sizes = SizesForMemory(table_mb);
  o.record.sizes.procs = max_procs;
  o.record.live_status = false;
  o.sink = [&](const IntervalOutput& out) {
    if (dir) {
      if (absl::Status s = dir->Write(out); !s.ok()) {
        std::fprintf(stderr, "ehprof agent: %s\n", std::string(s.message()).c_str());
      }
    }
    if (queue && !out.by_service.empty()) queue->Enqueue(PushBody(out, labels));
  };
  o.extra_metrics = [&]() -> std::string {
    if (!queue) return "";
    const PushQueue::Counters c = queue->counters();
    return absl::StrCat(", pushed ", c.pushed, " (failed attempts ", c.attempts_failed, ", refused ",
                        c.rejected, ", dropped ", c.dropped, ", given up ", c.abandoned, ", queued ",
                        c.queued, ")");
  };
  o.on_tick = [&] {
    if (g_reopen_log.exchange(false) && !log_path.empty()) ReopenLog(log_path);
  };

  InstallStopSignalHandlers();
  struct sigaction sa {};
  sa.sa_handler = OnHangup;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGHUP, &sa, nullptr);  // reopens the log instead of stopping
  rlimit nofile;
  if (getrlimit(RLIMIT_NOFILE, &nofile) == 0 && nofile.rlim_cur < nofile.rlim_max) {
    nofile.rlim_cur = nofile.rlim_max;
    setrlimit(RLIMIT_NOFILE, &nofile);
  }
  const VdsoFile vdso_file(ReadOwnVdso());  // read by the symbolizer while the loop runs
  o.symbols.vdso_file = vdso_file.path();

  AgentLoop loop(std::move(o));
  std::unique_ptr<MetricsServer> metrics;
  if (!metrics_addr.empty()) {
    const uint64_t cpu_at_start = CpuTimeNs();
    auto m = MetricsServer::Start(metrics_addr, [&loop, &queue, cpu_at_start] {
      return PrometheusText(loop.counters(), queue ? queue->counters() : PushQueue::Counters{},
                            queue != nullptr, CpuTimeNs() - cpu_at_start);
    });
    if (!m.ok()) {
      std::fprintf(stderr, "ehprof agent: %s\n", std::string(m.status().message()).c_str());
      return kExitFailure;
    }
    metrics = *std::move(m);
    std::fprintf(stderr, "ehprof agent: metrics at http://%s:%u/metrics\n",
                 metrics_addr.substr(0, metrics_addr.rfind(':')).c_str(), metrics->port());
  }
  absl::Status st = loop.Run();
  metrics.reset();
  if (queue) {
    // The last interval (and any backlog) gets a little time to arrive.
    if (size_t left = queue->Flush(std::chrono::seconds(10)); left > 0) {
      std::fprintf(stderr, "ehprof agent: %zu pushes not delivered at exit\n", left);
    }
    const PushQueue::Counters c = queue->counters();
    std::fprintf(stderr, "ehprof agent: pushed %llu profiles to %s (%llu refused, %llu dropped)\n",
                 static_cast<unsigned long long>(c.pushed), client->endpoint().c_str(),
                 static_cast<unsigned long long>(c.rejected), static_cast<unsigned long long>(c.dropped));
    queue.reset();
  }
  const AgentCounters c = loop.counters();
  std::fprintf(stderr, "ehprof agent: %llu samples in %llu intervals (%llu intervals dropped), stopped\n",
               static_cast<unsigned long long>(c.samples), static_cast<unsigned long long>(c.intervals),
               static_cast<unsigned long long>(c.intervals_dropped));
  if (!st.ok()) {
    std::fprintf(stderr, "ehprof agent: %s\n", std::string(st.message()).c_str());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace ehprof
