// The trackers of the interpreters of agent/interp/ (Ruby, PHP, Perl) a
// recording or `ehprof check` runs: the one place that knows them all, so
// the recorder and the command hold InterpTrackers only.
#ifndef EHPROF_AGENT_RECORD_INTERP_TRACKERS_H_
#define EHPROF_AGENT_RECORD_INTERP_TRACKERS_H_

#include <memory>
#include <vector>

#include "absl/functional/function_ref.h"
#include "agent/interp/interp_frame_table.h"
#include "agent/interp/interp_tracker.h"
#include "agent/tables/map_writer.h"
#include "base/warnings.h"

namespace ehprof {

// Which interpreters' frames to name (--no-ruby, --no-php, --no-perl).
struct InterpSelection {
  bool ruby = true;
  bool php = true;
  bool perl = true;
};

// A tracker per selected interpreter this build has. maps(kind): the
// session's procs map of that interpreter (SamplingSession::InterpProcsMap;
// null: name frames, publish nothing, as `ehprof check` does). The trackers
// fill `frames` and report to `warnings`; both outlive them.
std::vector<std::unique_ptr<InterpTracker>> MakeInterpTrackers(
    const InterpSelection& selection, absl::FunctionRef<std::unique_ptr<MapWriter>(ehp_interp_kind)> maps,
    InterpFrameTable* frames, Warnings* warnings);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_INTERP_TRACKERS_H_
