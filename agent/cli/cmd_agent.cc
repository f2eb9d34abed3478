// `ehprof agent`: continuous profiling of the machine (or of -p PIDs), one
// profile per interval to the sinks.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "agent/cli/agent_sinks.h"
#include "agent/cli/cli.h"
#include "agent/continuous/agent_loop.h"
#include "agent/continuous/metrics_server.h"
#include "agent/process/vdso_file.h"
#include "agent/record/run_control.h"
#include "base/output_target.h"

namespace ehprof {
namespace {

constexpr char kDescription[] = R"(Profiles continuously until SIGINT or SIGTERM (which write the last,
partial interval), aggregating stacks as they are sampled and writing one
profile per interval to the sinks (at least one). Stacks are unwound in the
kernel with CFI, as `ehprof record` does. Targets: every process (-a, the
default), or -p PIDs and their children.)";

constexpr char kFooter[] = R"(--pyroscope URL pushes to Grafana Pyroscope's push API (URL/push.v1.PusherService/Push):
one series per service an interval, named process_cpu, labelled service_name,
hostname, ehprof_view (and --label). A server that is down or slow never stops
sampling: pushes queue (--queue N, oldest dropped and counted) and are
retried with backoff. --otlp URL exports OTLP profiles (the v1development
schema of OpenTelemetry Collector v0.165.0) the same way: a resource per
service (service.name, host.name, container.id, k8s.pod.uid,
process.executable.name, --label pairs, ehprof.view). ehprof_view and ehprof.view say which --view
the stacks are in. --output-dir files are read with
`go tool pprof -http=: DIR/*.pb.gz`.)";

struct AgentFlags {
  SamplingFlags sampling;
  OffCpuFlags off_cpu;
  SinkFlags sinks;
  bool all = false;
  uint64_t memory_limit_mb = 96;
  std::string log_path;
  std::string metrics_addr;
  std::string view = "full";
  std::string cgroup_labels = "container.id,k8s.pod.uid";
};

void AddSinkOptions(CLI::App& app, SinkFlags* f) {
  const std::string g = "sinks";
  app.add_option("--pyroscope", f->push.url, "push each interval to this Pyroscope server")
      ->type_name("URL")
      ->group(g);
  app.add_option("--otlp", f->otlp.url,
                 "export each interval as OTLP profiles to this endpoint (an OpenTelemetry Collector: "
                 "http://HOST:4318, or :4317 with --otlp-protocol grpc)")
      ->type_name("URL")
      ->group(g);
  app.add_option("--otlp-protocol", f->otlp.protocol, "http/protobuf (default) or grpc")
      ->type_name("P")
      ->group(g);
  app.add_option("--otlp-compression", f->otlp.compression, "gzip (default) or none")
      ->type_name("C")
      ->group(g);
  app.add_option("--otlp-header", f->otlp.headers,
                 "a header of every OTLP request (repeatable; every user sees it in ps: secrets go in "
                 "--otlp-header-file)")
      ->type_name("'NAME: VALUE'")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(g);
  app.add_option("--otlp-header-file", f->otlp_header_file,
                 "headers of every OTLP request, 'NAME: VALUE' a line, read once at start (a file owned "
                 "by root or this user, writable by no one else: $CREDENTIALS_DIRECTORY/NAME under "
                 "systemd's LoadCredential=)")
      ->type_name("FILE")
      ->group(g);
  app.add_option("--otlp-ca", f->otlp.ca_file, "trust the CAs in this PEM bundle for an https:// --otlp")
      ->type_name("FILE")
      ->group(g);
  app.add_option("--output-dir", f->output_dir,
                 "one pprof file (.pb.gz) per interval, the newest --keep kept; each sample is "
                 "labelled service_name, comm and its cgroup labels (container_id, k8s_pod_uid)")
      ->type_name("DIR")
      ->group(g);
  app.add_option("--keep", f->keep, "files kept in --output-dir (default 60)")
      ->type_name("N")
      ->check(InRange<size_t>(1, size_t{1} << 30))
      ->group(g);
  const std::string p = "Pyroscope";
  app.add_option("--label", f->labels, "a label of every series (repeatable); with --otlp, of every resource")
      ->type_name("K=V")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll)
      ->group(p);
  app.add_option("--tenant", f->push.tenant, "X-Scope-OrgID (multi-tenant Pyroscope)")->type_name("ID")->group(p);
  app.add_option("--basic-auth-user", f->push.basic_user, "basic-auth user name")->type_name("U")->group(p);
  app.add_option("--basic-auth-password-file", f->basic_password_file,
                 "its password, the first line of FILE (owned by root or this user, writable by no one "
                 "else; never printed)")
      ->type_name("FILE")
      ->group(p);
  app.add_option("--bearer-token-file", f->bearer_file, "a bearer token, the first line of FILE (as the password's)")
      ->type_name("FILE")
      ->group(p);
  app.add_option("--pyroscope-ca", f->push.ca_file,
                 "trust the CAs in this PEM bundle for an https:// --pyroscope (default: the "
                 "system's)")
      ->type_name("FILE")
      ->group(p);
  app.add_option("--queue", f->queue_size, "pushes kept while the server is unreachable (default 60; --otlp has a queue of its own)")
      ->type_name("N")
      ->check(InRange<size_t>(1, 1000000))
      ->group(p);
  app.add_option("--queue-mb", f->queue_mb,
                 "and at most this many MiB of them, oldest dropped first (default 64; each queue)")
      ->type_name("MB")
      ->check(InRange<size_t>(1, 1 << 20))
      ->group(p);
}

void AddAgentOptions(CLI::App& app, AgentOptions* o, AgentFlags* f) {
  app.add_flag("-a,--all-cpus", f->all, "every process (the default)");
  app.add_option("--interval", o->interval_s, "seconds per profile (default 10)")
      ->type_name("S")
      ->check(InRange(0.5, 3600.0));
  app.add_option("--service-name", o->service_name,
                 "service_name of every sample (default: per process, its container or systemd unit "
                 "from its cgroup, else its executable's name)")
      ->type_name("S");
  app.add_option("--cgroup-labels", f->cgroup_labels,
                 "the labels each series takes from its processes' cgroup: container.id (the "
                 "runtime's full id), k8s.pod.uid (kubelet's pod), comma-separated, or none (default "
                 "both; Pyroscope names them container_id, k8s_pod_uid). A pod's processes are "
                 "service pod/UID unless --service-name is given")
      ->type_name("LIST")
      ->check([](const std::string& v) {
        unsigned bits;
        return ParseCgroupLabels(v, &bits) ? std::string() : "not a list of container.id, k8s.pod.uid or none";
      });
  app.add_option("--max-services", o->max_services,
                 "distinct service names in one interval (default 500); the processes of the others "
                 "are counted as service ehprof-other-services: random comms cannot make series without end")
      ->type_name("N")
      ->check(InRange<size_t>(1, 1000000));
  app.add_option("--container-storage", o->container_storage,
                 "containers/storage's root (podman, CRI-O), read for the names of containers: label "
                 "container_name, OTLP container.name (default /var/lib/containers/storage; \"\" for none; "
                 "only a root-owned record is read)")
      ->type_name("DIR");
  app.add_option("--memory-limit", f->memory_limit_mb,
                 "the resident size to stay within: above it after an interval, the symbol data of "
                 "the least recently used files is evicted until it fits (default 96; 0: no limit)")
      ->type_name("MB");
  app.add_option("--log", f->log_path, "write messages to FILE (reopened on SIGHUP)")->type_name("FILE");
  app.add_option("--metrics-every", o->log_every_s,
                 "a line of self-metrics (samples, lost, intervals, RSS, CPU) this often (default 60; "
                 "0: never)")
      ->type_name("S")
      ->check(InRange(0.0, 1e9));
  app.add_option("--metrics-addr", f->metrics_addr, "the same as a Prometheus scrape target (GET /metrics)")
      ->type_name("IP:PORT");
  AddViewOption(app, &f->view);
}

std::atomic<bool> g_reopen_log{false};
void OnHangup(int) { g_reopen_log.store(true); }

// Points stderr at the log; on an error, stderr stays where it was.
absl::Status ReopenLog(const std::string& path) {
  absl::StatusOr<UniqueFd> fd = OpenLogFile(path);
  if (!fd.ok()) return fd.status();
  ::dup2(fd->get(), STDERR_FILENO);
  return absl::OkStatus();
}

// SIGHUP reopens the log instead of stopping.
void InstallAgentSignals() {
  InstallStopSignalHandlers();
  struct sigaction sa {};
  sa.sa_handler = OnHangup;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGHUP, &sa, nullptr);
}

// Runs the loop until a stop signal; the metrics endpoint while it runs.
int RunLoop(AgentOptions o, const AgentFlags& f, AgentSinks& sinks) {
  AgentLoop loop(std::move(o));
  std::unique_ptr<MetricsServer> metrics;
  if (!f.metrics_addr.empty()) {
    const uint64_t cpu_at_start = CpuTimeNs();
    auto m = MetricsServer::Start(f.metrics_addr, [&loop, &sinks, cpu_at_start] {
      return sinks.PrometheusText(loop.counters(), CpuTimeNs() - cpu_at_start);
    });
    if (!m.ok()) {
      std::fprintf(stderr, "ehprof agent: %s\n", std::string(m.status().message()).c_str());
      return kExitFailure;
    }
    metrics = *std::move(m);
    std::fprintf(stderr, "ehprof agent: metrics at http://%s:%u/metrics\n",
                 f.metrics_addr.substr(0, f.metrics_addr.rfind(':')).c_str(), metrics->port());
  }
  absl::Status st = loop.Run();
  metrics.reset();
  sinks.Close();
  const AgentCounters c = loop.counters();
  std::fprintf(stderr, "ehprof agent: %llu samples in %llu intervals (%llu intervals dropped), stopped\n",
               static_cast<unsigned long long>(c.samples), static_cast<unsigned long long>(c.intervals),
               static_cast<unsigned long long>(c.intervals_dropped));
  if (c.walks_cut) {
    std::fprintf(stderr, "ehprof agent: %llu stack walks cut short by their time budget (a share of each "
                 "CPU's time: kernel.perf_cpu_time_max_percent)\n",
                 static_cast<unsigned long long>(c.walks_cut));
  }
  if (c.walks_finished_late || c.deferred_budget_drops) {
    std::fprintf(stderr, "ehprof agent: %llu stack walks finished late (their table or process not known yet "
                 "at the sample), %llu stack copies over the per-CPU budget\n",
                 static_cast<unsigned long long>(c.walks_finished_late),
                 static_cast<unsigned long long>(c.deferred_budget_drops));
  }
  if (!st.ok()) {
    std::fprintf(stderr, "ehprof agent: %s\n", std::string(st.message()).c_str());
    return kExitFailure;
  }
  return kExitOk;
}

}  // namespace

int RunAgentCommand(const std::vector<std::string>& args) {
  ConfigureAgentMalloc();
  AgentOptions o;
  AgentFlags f;
  // Walks finished late: a quarter of record's copy budget, and held
  // samples' copies capped at 8 MiB (the agent's memory; over it they go
  // on with their kernel frames, counted), each held one interval at most
  // (set below): a held sample keeps its process's files open, and an
  // exited process's must be let go within two intervals
  // (hostile_state_priv_test).
  o.record.deferred_kib_per_s = 512;
  o.record.deferred_max_bytes = size_t{8} << 20;
  auto app = NewCommandApp("agent", kDescription);
  app->footer(kFooter);
  AddSamplingOptions(*app, &o.record, &f.sampling);
  AddSinkOptions(*app, &f.sinks);
  AddAgentOptions(*app, &o, &f);
  AddOffCpuOptions(*app, &f.off_cpu);
  if (auto exit = ParseCommandLine(*app, args)) return *exit;
  if (f.sinks.output_dir.empty() && f.sinks.push.url.empty() && f.sinks.otlp.url.empty()) {
    return UsageError("agent", "give a sink: --pyroscope URL, --otlp URL or --output-dir DIR");
  }
  if (f.all && !o.record.pids.empty()) return UsageError("agent", "give one of -a, -p");
  if (o.record.sample_period != 0) return UsageError("agent", "-c is for ehprof record (for now): use -F");
  if (LooksLikeProbe(f.sampling.event)) {
    return UsageError("agent", "-e takes clock events here; probes are for ehprof record (for now)");
  }
  if (f.off_cpu.off_cpu && !IsClockEvent(f.sampling.event)) {
    return UsageError("agent", "--off-cpu runs beside a clock: -e cpu-clock or task-clock");
  }
  ApplySamplingFlags(f.sampling, *app, &o.record);
  ApplyOffCpuFlags(f.off_cpu, &o.record);  // beside the CPU samples
  o.record.all = o.record.pids.empty();
  o.record.live_status = false;
  o.record.deferred_max_hold_ns = static_cast<uint64_t>(std::min(o.interval_s, 30.0) * 1e9);
  o.record.start_session = BpfSession::StartSampling;
  o.memory_limit_bytes = f.memory_limit_mb << 20;
  ParseCgroupLabels(f.cgroup_labels, &o.cgroup_labels);  // checked by the option
  // Its data pages are mapped twice here: their size counts twice in RSS.
  o.record.sizes.ringbuf_bytes =
      AgentRingBytes(static_cast<unsigned>(sysconf(_SC_NPROCESSORS_ONLN)), o.record.frequency_hz,
                     f.off_cpu.off_cpu);

  // One view for the profiles and the label saying which it is.
  o.symbols.view = f.sinks.view = ViewOf(f.view);
  AgentSinks sinks;
  if (absl::Status s = sinks.Open(f.sinks); !s.ok()) {
    if (absl::IsInvalidArgument(s)) return UsageError("agent", std::string(s.message()));
    std::fprintf(stderr, "ehprof agent: %s\n", std::string(s.message()).c_str());
    return kExitFailure;
  }
  if (!f.log_path.empty()) {
    if (absl::Status s = ReopenLog(f.log_path); !s.ok()) {
      std::fprintf(stderr, "ehprof agent: %s\n", std::string(s.message()).c_str());
      return kExitFailure;
    }
  }
  o.sink = [&sinks](const IntervalOutput& out) { sinks.Write(out); };
  o.extra_metrics = [&sinks] { return sinks.MetricsSuffix(); };
  o.on_tick = [&f] {
    if (g_reopen_log.exchange(false) && !f.log_path.empty()) {
      // Said in the log still open: the old file keeps being written.
      if (absl::Status s = ReopenLog(f.log_path); !s.ok()) {
        std::fprintf(stderr, "ehprof agent: SIGHUP: %s; writing on to the log open before\n",
                     std::string(s.message()).c_str());
      }
    }
  };
  InstallAgentSignals();
  RaiseFileLimit();
  const VdsoFile vdso_file(ReadOwnVdso());  // read by the symbolizer while the loop runs
  o.symbols.vdso_file = vdso_file.path();
  return RunLoop(std::move(o), f, sinks);
}

}  // namespace ehprof
