#include "agent/record/targets_map.h"

#include "absl/strings/str_cat.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

absl::Status AddTarget(MapWriter& targets, uint32_t id, uint8_t kind) {
  const absl::Status st = targets.Write(id, &kind, 1);
  if (st.ok()) return st;
  const char* what = kind == EHP_TARGET_THREAD ? "tid" : "pid";
  if (absl::IsResourceExhausted(st)) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot sample ", what, " ", id, ": the BPF targets map is full (",
                     EHP_MAX_TARGETS, " pids and tids, followed children included)"));
  }
  return absl::InternalError(
      absl::StrCat("cannot sample ", what, " ", id, ": adding it to the BPF targets map failed: ", st.message()));
}

}  // namespace ehprof
