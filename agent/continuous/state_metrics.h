// The state a long-running agent keeps per process and per file (what the
// recording tracks, the fds it holds, the BPF maps' use) as Prometheus
// metrics: over a long run they follow what runs now, never what ever ran.
#ifndef EHPROF_AGENT_CONTINUOUS_STATE_METRICS_H_
#define EHPROF_AGENT_CONTINUOUS_STATE_METRICS_H_

#include <string>

#include "agent/record/recorder.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

// ehprof_tracked_processes, ehprof_remembered_processes, ehprof_kept_files,
// ehprof_table_files{state=...}, ehprof_bpf_map_entries{map=...}.
// ehprof_tables_loaded_total, ehprof_tables_refused_total{reason=...}.
std::string StateMetrics(const TrackedState& s);
// ehprof_walk_stops_total{reason=...}: each enum ehp_stop_reason's count
// (its name, lower case, without EHP_STOP_), "none" left out.
std::string WalkStopMetrics(const uint64_t (&stops)[EHP_STOP_REASON_COUNT]);

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_STATE_METRICS_H_
