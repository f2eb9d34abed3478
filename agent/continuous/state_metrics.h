// The state a long-running agent keeps per process and per file (what the
// recording tracks, the fds it holds, the BPF maps' use) as Prometheus
// metrics: over a long run they follow what runs now, never what ever ran.
#ifndef EHPROF_AGENT_CONTINUOUS_STATE_METRICS_H_
#define EHPROF_AGENT_CONTINUOUS_STATE_METRICS_H_

#include <string>

#include "agent/record/recorder.h"

namespace ehprof {

// ehprof_tracked_processes, ehprof_remembered_processes, ehprof_kept_files,
// ehprof_table_files{state=...}, ehprof_bpf_map_entries{map=...}.
std::string StateMetrics(const TrackedState& s);

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_STATE_METRICS_H_
