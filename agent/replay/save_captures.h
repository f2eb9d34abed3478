// `ehprof record --save-captures DIR`: each --verify capture of a recording
// as a capture file (capture.h), with its process's mappings at the
// sample's time and the walk the kernel recorded. The stack is trimmed to
// what the replayed walk read when neither the replay nor libdwfl finds
// anything else in the trimmed copy.
#ifndef EHPROF_AGENT_REPLAY_SAVE_CAPTURES_H_
#define EHPROF_AGENT_REPLAY_SAVE_CAPTURES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/process/process_tracker.h"
#include "agent/record/raw_sample.h"
#include "agent/replay/capture.h"
#include "agent/replay/replay.h"

namespace ehprof {

// The capture of samples[vc.sample]; NotFound when the tracker has no
// mappings for it.
absl::StatusOr<Capture> MakeCapture(const RawSample& sample, const VerifyCapture& vc,
                                    const ProcessTracker& tracker);

// Cuts the stack to what the walks need (see above); returns c unchanged
// when a walk cannot be replayed here or the cut would change a walk.
Capture TrimCapture(Replayer& replayer, Capture c);

// Writes DIR/COMM-PID-N.capture for each capture; the number written.
absl::StatusOr<size_t> SaveCaptures(const std::vector<RawSample>& samples,
                                    const std::vector<VerifyCapture>& captures,
                                    const ProcessTracker& tracker, const std::string& dir);

}  // namespace ehprof

#endif  // EHPROF_AGENT_REPLAY_SAVE_CAPTURES_H_
