// --verify: the in-kernel walk of captured samples against libdwfl's unwind
// of the same registers and stack copy, frame by frame. libdw is the
// outside reference that shows the BPF unwinder is right on any binary.
#ifndef EHPROF_AGENT_VERIFY_VERIFY_H_
#define EHPROF_AGENT_VERIFY_VERIFY_H_

#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "agent/process/process_tracker.h"
#include "agent/record/raw_sample.h"

namespace ehprof {

struct VerifyResult {
  uint64_t captures = 0;    // samples with a stack copy
  uint64_t checked = 0;     // ... that libdwfl could unwind
  uint64_t samples_agree = 0;
  uint64_t frames_agree = 0, frames_total = 0;  // position by position
  uint64_t ours_longer = 0, libdw_longer = 0, diverged = 0;
  // The file of our frame where the walks first differ.
  std::map<std::string, uint64_t> divergence_by_file;
};

VerifyResult VerifyWalks(const std::vector<RawSample>& samples,
                         const std::vector<VerifyCapture>& captures, const ProcessTracker& tracker);
void WriteVerifyReport(const VerifyResult& r, std::ostream& out);

}  // namespace ehprof

#endif  // EHPROF_AGENT_VERIFY_VERIFY_H_
