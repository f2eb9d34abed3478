// The --output-dir sink: one pprof file per interval (every service's
// samples, labelled service_name), named by its start time so a listing
// sorts oldest first, private (0600), written whole (a temporary file
// renamed into place, removed when anything fails), and only the newest
// `keep` kept: the oldest are removed before a new one is written, so a
// full disk still gets room for the newest.
#ifndef EHPROF_AGENT_CONTINUOUS_OUTPUT_DIR_H_
#define EHPROF_AGENT_CONTINUOUS_OUTPUT_DIR_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/continuous/interval_output.h"
#include "agent/output/output_pprof.h"

namespace ehprof {

class OutputDir {
 public:
  // Creates dir (0700) when missing; an error when it cannot be written or
  // is not root's or this user's (MakeOwnDirectory).
  static absl::StatusOr<OutputDir> Open(std::string dir, size_t keep);
  absl::Status Write(const IntervalOutput& interval);
  // The profile files in the directory that this user wrote (regular
  // files it owns), oldest first.
  std::vector<std::string> Files() const;

 private:
  OutputDir(std::string dir, size_t keep) : dir_(std::move(dir)), keep_(keep) {}
  // Removes the oldest files until `coming` more fit within keep_.
  void Rotate(size_t coming);
  // One pprof file, through a temporary renamed into place.
  absl::Status WriteFile(const InternedProfile& profile, const std::vector<uint32_t>& samples,
                         const std::string& name,
                         const PprofOptions& po);
  std::string dir_;
  size_t keep_;
  uint64_t seq_ = 0;
};


}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_OUTPUT_DIR_H_
