#include "agent/continuous/state_metrics.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "agent/continuous/metrics_server.h"

namespace ehprof {
namespace {

// One metric family of several labelled samples: HELP and TYPE once.
std::string Family(const char* name, const char* help,
                   std::initializer_list<std::pair<std::string, double>> samples) {
  std::string out;
  for (const auto& [labels, value] : samples) {
    std::string one = PromMetric(name, "gauge", help, value, labels);
    if (!out.empty()) one = one.substr(one.find(absl::StrCat("\n", name, "{")) + 1);
    out += one;
  }
  return out;
}

}  // namespace

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
  out += Family("ehprof_table_files", "Files known to the unwind tables, by state.",
                {{"state=\"known\"", static_cast<double>(s.tables.files)},
                 {"state=\"unused_loaded\"", static_cast<double>(s.tables.unused)},
                 {"state=\"unused_without_table\"", static_cast<double>(s.tables.idle)}});
  out += PromMetric("ehprof_table_builds_dropped_total", "counter",
                    "Queued table builds dropped because no process mapped the file any more.",
                    static_cast<double>(s.tables.dropped_builds));
  out += Family("ehprof_bpf_map_entries", "Entries in use in the BPF maps.",
                {{"map=\"procs\"", static_cast<double>(s.processes)},
                 {"map=\"file_tables\"", static_cast<double>(s.kernel_files)},
                 {"map=\"tables\"", static_cast<double>(s.store.tables)},
                 {"map=\"pages\"", static_cast<double>(s.store.pages)},
                 {"map=\"rows\"", static_cast<double>(s.store.row_chunks)},
                 {"map=\"palettes\"", static_cast<double>(s.store.palette_words)},
                 {"map=\"rules\"", static_cast<double>(s.store.rules)}});
  return out;
}

}  // namespace ehprof
