#include "agent/record/targets_map.h"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

absl::Status AddTarget(int targets_fd, uint32_t id, uint8_t kind) {
  if (bpf_map_update_elem(targets_fd, &id, &kind, BPF_ANY) == 0) return absl::OkStatus();
  const int err = errno;
  const char* what = kind == EHP_TARGET_THREAD ? "tid" : "pid";
  if (err == E2BIG) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot sample ", what, " ", id, ": the BPF targets map is full (",
                     EHP_MAX_TARGETS, " pids and tids, followed children included)"));
  }
  return absl::InternalError(
      absl::StrCat("cannot sample ", what, " ", id, ": adding it to the BPF targets map failed: ", std::strerror(err)));
}

}  // namespace ehprof
