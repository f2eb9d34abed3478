// The BPF targets map (bpf/maps.bpf.h: pid or tid -> enum ehp_target) as
// user space fills it for -p, -t and the command.
#ifndef EHPROF_AGENT_RECORD_TARGETS_MAP_H_
#define EHPROF_AGENT_RECORD_TARGETS_MAP_H_

#include <cstdint>

#include "absl/status/status.h"
#include "agent/tables/map_writer.h"

namespace ehprof {

// Adds id (kind EHP_TARGET_PROCESS: a pid; EHP_TARGET_THREAD: a tid) to
// targets (values of one byte, the kind). A failed update (a full map) is
// an error naming the id and why, never a target left unsampled without a
// word.
absl::Status AddTarget(MapWriter& targets, uint32_t id, uint8_t kind);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_TARGETS_MAP_H_
