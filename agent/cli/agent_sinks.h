// Where `ehprof agent` sends each interval: a directory of pprof files, a
// Pyroscope server, an OTLP profiles endpoint (each through its own
// retrying queue), or several; and the agent's self-metrics in
// Prometheus' text format.
#ifndef EHPROF_AGENT_CLI_AGENT_SINKS_H_
#define EHPROF_AGENT_CLI_AGENT_SINKS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/continuous/agent_loop.h"
#include "agent/continuous/output_dir.h"
#include "agent/output/stack_view.h"
#include "agent/sink/otlp_client.h"
#include "agent/sink/push_queue.h"
#include "agent/sink/push_request.h"
#include "agent/sink/pyroscope_client.h"

namespace ehprof {

struct SinkFlags {
  std::string output_dir;
  size_t keep = 60;
  PyroscopeOptions push;
  std::vector<std::string> labels;  // K=V
  std::string basic_password_file;
  std::string bearer_file;
  size_t queue_size = 60;
  size_t queue_mb = 64;  // and at most this many MiB queued, each queue
  OtlpOptions otlp;  // --otlp URL; --label pairs become resource attributes
  std::string otlp_header_file;  // more otlp.headers, read at Open
  // The view the profiles are in: label ehprof_view of every series,
  // attribute ehprof.view of every resource.
  StackView view = StackView::kFull;
};

class AgentSinks {
 public:
  // Opens the directory and the Pyroscope client; a bad flag (label,
  // URL) is InvalidArgument, anything else (a directory or secret file
  // that cannot be read) another code.
  absl::Status Open(const SinkFlags& flags);

  // On the agent's worker thread, once an interval.
  void Write(const IntervalOutput& out);
  // ", pushed N (...)" for the self-metrics line; empty without Pyroscope.
  std::string MetricsSuffix() const;
  std::string PrometheusText(const AgentCounters& c, uint64_t cpu_ns) const;
  // Gives queued pushes a little time to arrive, then says what happened.
  void Close();

 private:
  absl::Status OpenOtlp(const SinkFlags& flags);
  // ehprof_sink_intervals_{exported,refused,dropped}_total{sink=...}
  // (agent_metrics.cc, with PrometheusText).
  std::string SinkMetrics() const;
  void WriteDir(const IntervalOutput& out);
  std::unique_ptr<OutputDir> dir_;
  uint64_t dir_failing_ = 0;                // failed writes in a row; the worker thread's
  std::atomic<uint64_t> dir_failures_{0};  // all failed writes, for the metrics
  std::atomic<uint64_t> dir_written_{0};   // intervals written, likewise
  std::unique_ptr<PyroscopeClient> client_;
  std::unique_ptr<PushQueue> queue_;
  Labels labels_;  // of every series, hostname included
  std::unique_ptr<OtlpClient> otlp_;
  std::unique_ptr<PushQueue> otlp_queue_;
  Labels otlp_attributes_;  // of every resource: host.name and --label
  std::atomic<uint64_t> series_dropped_{0};  // left out of pushes (PushBody's dropped)
};

// One push request for an interval: a series per service, its profile the
// service's samples as a gzipped pprof. A series whose profile cannot be
// encoded is left out, and *dropped gets why, naming the service.
std::string PushBody(const IntervalOutput& out, const Labels& common, std::vector<std::string>* dropped);

}  // namespace ehprof

#endif  // EHPROF_AGENT_CLI_AGENT_SINKS_H_
