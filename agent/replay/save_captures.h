// `ehprof record --save-captures DIR`: each --verify capture of a recording
// as a capture file (bpf/host/capture.h), with its process's mappings at
// the sample's time, the walk the kernel recorded, and what
// capture_tables.h adds while the files are at hand: the table entries the
// walk reads, libdwfl's frames, the stack trimmed to what the walks need.
#ifndef EHPROF_AGENT_REPLAY_SAVE_CAPTURES_H_
#define EHPROF_AGENT_REPLAY_SAVE_CAPTURES_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/process/process_tracker.h"
#include "agent/record/raw_sample.h"
#include "bpf/host/capture.h"

namespace ehprof {

// The capture of samples[vc.sample]; NotFound when the tracker has no
// mappings for it.
absl::StatusOr<Capture> MakeCapture(const RawSample& sample, const VerifyCapture& vc,
                                    const ProcessTracker& tracker);

struct SavedCaptures {
  size_t written = 0;
  // Captures this machine could not complete (CompleteCapture's error; a
  // file gone or changed since the sample): not written.
  size_t left_out = 0;
  std::string first_left_out;  // the first one's reason
};

// Writes DIR/COMM-PID-N.capture for each capture it completes.
absl::StatusOr<SavedCaptures> SaveCaptures(const std::vector<RawSample>& samples,
                                    const std::vector<VerifyCapture>& captures,
                                    const ProcessTracker& tracker, const std::string& dir);

}  // namespace ehprof

#endif  // EHPROF_AGENT_REPLAY_SAVE_CAPTURES_H_
