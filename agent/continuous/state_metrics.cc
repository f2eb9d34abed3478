#include "agent/continuous/state_metrics.h"

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "agent/continuous/metrics_server.h"

namespace ehprof {

std::string StateMetrics(const TrackedState& s) {
  std::string out;
  out += PromMetric("ehprof_tracked_processes", "gauge", "Live processes with a BPF process entry.",
                    static_cast<double>(s.processes));
  out += PromMetric("ehprof_remembered_processes", "gauge",
                    "Processes whose mappings are kept for resolving their samples.",
                    static_cast<double>(s.remembered));
  out += PromMetric("ehprof_kept_files", "gauge",
                    "File descriptors held on mapped files (and their debug files) for symbolizing.",
                    static_cast<double>(s.kept_files));
  out += PromFamily("ehprof_table_files", "gauge", "Files known to the unwind tables, by state.",
                {{"state=\"known\"", static_cast<double>(s.tables.files)},
                 {"state=\"unused_loaded\"", static_cast<double>(s.tables.unused)},
                 {"state=\"unused_without_table\"", static_cast<double>(s.tables.idle)}});
  out += PromMetric("ehprof_table_builds_dropped_total", "counter",
                    "Queued table builds dropped because no process mapped the file any more.",
                    static_cast<double>(s.tables.dropped_builds));
  out += PromFamily("ehprof_bpf_map_entries", "gauge", "Entries in use in the BPF maps.",
                {{"map=\"procs\"", static_cast<double>(s.processes)},
                 {"map=\"file_tables\"", static_cast<double>(s.kernel_files)},
                 {"map=\"tables\"", static_cast<double>(s.store.tables)},
                 {"map=\"pages\"", static_cast<double>(s.store.pages)},
                 {"map=\"rows\"", static_cast<double>(s.store.row_chunks)},
                 {"map=\"palettes\"", static_cast<double>(s.store.palette_words)},
                 {"map=\"rules\"", static_cast<double>(s.store.rules)}});
  out += PromMetric("ehprof_tables_loaded_total", "counter",
                    "Unwind tables built (or read from the table cache) and loaded into the BPF maps.",
                    static_cast<double>(s.tables.loaded));
  out += PromMetric("ehprof_tables_from_cache_total", "counter", "Table builds served by the on-disk table cache.",
                    static_cast<double>(s.tables.from_cache));
  out += PromFamily("ehprof_tables_refused_total", "counter",
                    "Files left without an unwind table (unwound with frame pointers), by reason: the build "
                    "failed or refused the file, or the BPF maps had no room.",
                    {{"reason=\"build_failed\"", static_cast<double>(s.tables.failed)},
                     {"reason=\"no_space\"", static_cast<double>(s.tables.no_space)}});
  out += PromMetric("ehprof_tables_evicted_total", "counter", "Unused tables evicted to make room.",
                    static_cast<double>(s.tables.evicted));
  return out;
}

std::string WalkStopMetrics(const uint64_t (&stops)[EHP_STOP_REASON_COUNT]) {
  std::vector<std::pair<std::string, double>> samples;
#define EHP_STOP_SAMPLE_(name, value, text)                                                    \
  if (value != EHP_STOP_NONE) {                                                                \
    samples.emplace_back(absl::StrCat("reason=\"", absl::AsciiStrToLower(absl::string_view(#name).substr(9)), \
                                      "\""),                                                   \
                         static_cast<double>(stops[value]));                                   \
  }
  EHP_STOP_REASONS(EHP_STOP_SAMPLE_)
#undef EHP_STOP_SAMPLE_
  return PromFamily("ehprof_walk_stops_total", "counter",
                    "Samples' user stack walks by the reason they stopped (end_of_stack and fp_end: "
                    "complete; the others cut short).",
                    samples);
}

}  // namespace ehprof
