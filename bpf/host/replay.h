// A capture replayed: ehprof's BPF walk (its C build, walk_replay.h) run on
// the capture's registers and stack over in-memory maps filled from the
// capture's own table entries, and compared frame by frame with the frames
// the capture expects: the kernel's walk and libdwfl's unwind, both from
// the recording machine. Needs none of the captured files.
#ifndef EHPROF_BPF_HOST_REPLAY_H_
#define EHPROF_BPF_HOST_REPLAY_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/host/capture.h"
#include "bpf/host/host_maps.h"

namespace ehprof {

struct ReplayResult {
  std::vector<uint64_t> frames;  // the replayed walk, leaf first, EHP_FRAME_* bits kept
  uint32_t stop = 0;             // enum ehp_stop_reason
  uint64_t read_end = 0;         // highest stack address + 1 the walk read
  std::vector<uint64_t> libdwfl;  // libdwfl's pcs, leaf first
  std::string libdwfl_stop;       // DwflUnwinder::last_stop
  size_t agree = 0;               // positions where both have the same address
  // Both walks give the same addresses, the same number of them.
  bool AgreesWithLibdwfl() const;
  // The replay found what the BPF walk recorded in the capture.
  bool MatchesRecorded(const Capture& c) const;
  // Counts agree from frames and libdwfl.
  void CountAgreement();
};

// The walk of c over maps (which hold the tables of c's mappings' table
// ids); the process entry is made from c's mappings. libdwfl is left empty.
ReplayResult ReplayWalk(HostMaps& maps, const Capture& c);

// The walk of c over its own entries, beside the libdwfl frames it holds.
absl::StatusOr<ReplayResult> ReplayCapture(const Capture& c);

// The replay and libdwfl side by side, one frame a line, and the verdicts.
std::string FormatReplay(const Capture& c, const ReplayResult& r);

}  // namespace ehprof

#endif  // EHPROF_BPF_HOST_REPLAY_H_
