// `ehprof agent --metrics-addr`'s page: the loop's counters, each sink's,
// memory by part, the tracked state and the walks' stop reasons.
#include <string>
#include <utility>
#include <vector>

#include "agent/cli/agent_sinks.h"
#include "agent/continuous/metrics_server.h"
#include "agent/continuous/state_metrics.h"
#include "base/guarded.h"

namespace ehprof {

std::string AgentSinks::SinkMetrics() const {
  // One family per outcome, labelled by sink, for alerts over every sink
  // alike: an interval is one push (Pyroscope), one export (OTLP) or one
  // file (--output-dir).
  std::vector<std::pair<std::string, double>> exported, refused, dropped;
  for (const auto& [name, q] : {std::pair{"pyroscope", queue_.get()}, std::pair{"otlp", otlp_queue_.get()}}) {
    if (q == nullptr) continue;
    const PushQueue::Counters c = q->counters();
    const std::string label = std::string("sink=\"") + name + "\"";
    exported.emplace_back(label, static_cast<double>(c.pushed));
    refused.emplace_back(label, static_cast<double>(c.rejected));
    dropped.emplace_back(label, static_cast<double>(c.dropped + c.abandoned));
  }
  if (dir_) {
    exported.emplace_back("sink=\"output_dir\"", static_cast<double>(dir_written_.load()));
    refused.emplace_back("sink=\"output_dir\"", static_cast<double>(dir_failures_.load()));
    dropped.emplace_back("sink=\"output_dir\"", 0);
  }
  if (exported.empty()) return "";
  return PromFamily("ehprof_sink_intervals_exported_total", "counter",
                    "Intervals a sink delivered (a Pyroscope push, an OTLP export, a file).", exported) +
         PromFamily("ehprof_sink_intervals_refused_total", "counter",
                    "Intervals a sink refused: the server answered 4xx, or the file could not be written.",
                    refused) +
         PromFamily("ehprof_sink_intervals_dropped_total", "counter",
                    "Intervals never delivered: dropped from a full queue (oldest first) or given up after "
                    "retries.",
                    dropped);
}

std::string AgentSinks::PrometheusText(const AgentCounters& c, uint64_t cpu_ns) const {
  std::string out;
  out += PromMetric("ehprof_samples_total", "counter", "Samples aggregated into intervals.", c.samples);
  out += PromMetric("ehprof_samples_lost_total", "counter", "Samples lost to a full ring buffer.",
                    c.samples_lost);
  out += PromMetric("ehprof_walks_finished_late_total", "counter",
                    "Samples whose walk stopped for want of a table or a process entry, finished from their "
                    "stack's copy once it was there.",
                    c.walks_finished_late);
  out += PromMetric("ehprof_deferred_budget_drops_total", "counter",
                    "Such samples whose stack was not copied: over the per-CPU budget (--defer-budget).",
                    c.deferred_budget_drops);
  out += PromMetric("ehprof_intervals_total", "counter", "Intervals handed to the sinks.", c.intervals);
  out += PromMetric("ehprof_intervals_dropped_total", "counter",
                    "Intervals dropped because symbolization fell behind.", c.intervals_dropped);
  out += PromMetric("ehprof_stacks_dropped_total", "counter",
                    "Samples over the distinct-stack cap of an interval.", c.stacks_dropped);
  out += PromMetric("ehprof_services", "gauge", "Distinct service names with samples in the last interval.",
                    static_cast<double>(c.services));
  out += PromMetric("ehprof_services_overflowed_total", "counter",
                    "Processes counted as service ehprof-other-services, past --max-services (once per "
                    "interval each).",
                    static_cast<double>(c.services_overflowed));
  out += PromMetric("ehprof_internal_errors_total", "counter",
                    "Exceptions caught at the top of a thread or of one item's handling.",
                    static_cast<double>(GuardedExceptions()));
  if (queue_) {
    const PushQueue::Counters q = queue_->counters();
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
    out += PromMetric("ehprof_push_queue_bytes", "gauge", "Bytes of the pushes waiting.",
                      static_cast<double>(q.queued_bytes));
    out += PromMetric("ehprof_push_series_dropped_total", "counter",
                      "Series left out of a push because their profile could not be encoded.",
                      static_cast<double>(series_dropped_.load()));
  }
  if (otlp_queue_) {
    const PushQueue::Counters q = otlp_queue_->counters();
    out += PromMetric("ehprof_otlp_exports_total", "counter", "OTLP profile exports delivered.", q.pushed);
    out += PromMetric("ehprof_otlp_failed_attempts_total", "counter", "OTLP export attempts that failed.",
                      q.attempts_failed);
    out += PromMetric("ehprof_otlp_exports_lost_total", "counter",
                      "OTLP exports refused, dropped from a full queue or given up.",
                      q.rejected + q.dropped + q.abandoned);
    out += PromMetric("ehprof_otlp_queue_depth", "gauge", "OTLP exports waiting.", static_cast<double>(q.queued));
    out += PromMetric("ehprof_otlp_queue_bytes", "gauge", "Bytes of the OTLP exports waiting.",
                      static_cast<double>(q.queued_bytes));
  }
  if (dir_) {
    out += PromMetric("ehprof_output_dir_failures_total", "counter",
                      "Intervals that could not be written to --output-dir.",
                      static_cast<double>(dir_failures_.load()));
  }
  out += SinkMetrics();
  out += MemoryMetrics(c);
  out += WalkStopMetrics(c.walk_stops);
  out += StateMetrics(c.state);
  out += PromMetric("ehprof_cpu_seconds_total", "counter", "CPU time of the agent since it started.",
                    cpu_ns / 1e9);
  return out;
}

}  // namespace ehprof
