// The frame-pointer walk against the CFI walk of the same samples: where
// they agree, where FP stops early, where FP goes wrong (frames that are
// not call sites), per binary and per function.
#ifndef EHPROF_AGENT_VERIFY_WALK_COMPARE_H_
#define EHPROF_AGENT_VERIFY_WALK_COMPARE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "agent/resolve/resolved_sample.h"
#include "elf/elf_file.h"

namespace ehprof {

// Whether an address printed as a call site (return address - 1) follows a
// call instruction in the file's bytes; files are read once.
class CallSiteChecker {
 public:
  CallSiteChecker();
  ~CallSiteChecker();
  bool IsCallSite(const std::string& dso, uint64_t elf_vaddr);

 private:
  std::map<std::string, std::unique_ptr<ElfFile>> files_;  // null: unreadable
};

struct WalkComparison {
  struct Count {
    uint64_t samples = 0, shorter = 0, wrong = 0;
  };
  uint64_t samples = 0;     // samples with a user stack in the CFI walk
  uint64_t agree = 0, fp_shorter = 0, fp_wrong = 0;
  uint64_t cfi_frames = 0, fp_frames = 0;
  uint64_t fp_checked = 0, fp_not_call_sites = 0;  // non-leaf FP frames
  // Keyed by the CFI frame at which FP first stops or diverges.
  std::map<std::string, Count> per_binary;
  std::map<std::string, Count> per_function;
};

// cfi[i] and fp[i] must be the two walks of the same sample.
WalkComparison CompareWalks(const std::vector<ResolvedSample>& cfi,
                            const std::vector<ResolvedSample>& fp, CallSiteChecker& checker);
void WriteComparisonReport(const WalkComparison& c, std::ostream& out);
// Folded stacks with two counts, "stack FP_COUNT CFI_COUNT", the format
// FlameGraph's difffolded/flamegraph.pl draw as a differential graph.
absl::Status WriteDiffFolded(const std::vector<ResolvedSample>& cfi,
                             const std::vector<ResolvedSample>& fp, std::ostream& out);

}  // namespace ehprof

#endif  // EHPROF_AGENT_VERIFY_WALK_COMPARE_H_
