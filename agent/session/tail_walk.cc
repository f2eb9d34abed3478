#include "agent/session/tail_walk.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "bpf/ehprof_abi.h"
// The skeleton declares libbpf's usdt.bpf.h kconfig extern as C's _Bool.
#if EHPROF_TAIL_CALL_BUILD
#define _Bool bool
#include "profiler_compat.skel.h"
#undef _Bool
#endif

namespace ehprof {
namespace {

// A walk program, the array it is entry 0 of, and the programs whose
// chains it continues (any one loaded loads it).
struct Chain {
  const char* walk;
  const char* array;
  const char* starts[3];
};
constexpr Chain kChains[] = {
    {"ehprof_sample_walk", "walk_perf", {"ehprof_sample"}},
    {"ehprof_kprobe_walk", "walk_kprobe", {"ehprof_uprobe", "ehprof_usdt", "ehprof_kprobe"}},
    {"ehprof_tracepoint_walk", "walk_tp", {"ehprof_tracepoint"}},
    {"ehprof_switch_walk", "walk_switch", {"ehprof_switch"}},
};

}  // namespace

absl::StatusOr<std::string_view> TailCallObjectBytes() {
#if EHPROF_TAIL_CALL_BUILD
  size_t size = 0;
  const void* data = ehprof_compat_bpf__elf_bytes(&size);
  return std::string_view(static_cast<const char*>(data), size);
#else
  return absl::FailedPreconditionError(
      "this kernel has no bpf_loop (5.17), bpf_task_pt_regs (5.15) or bpf_get_current_task_btf "
      "(5.11), and this build has no tail-call walk for it (x86-64 only so far)");
#endif
}

bool IsTailCallBuild(bpf_object* obj) {
  return bpf_object__find_program_by_name(obj, kChains[0].walk) != nullptr;
}

void SetTailWalkAutoload(bpf_object* obj) {
  for (const Chain& c : kChains) {
    bpf_program* walk = bpf_object__find_program_by_name(obj, c.walk);
    if (!walk) continue;
    bool wanted = false;
    for (const char* start : c.starts) {
      bpf_program* p = start ? bpf_object__find_program_by_name(obj, start) : nullptr;
      wanted = wanted || (p && bpf_program__autoload(p));
    }
    bpf_program__set_autoload(walk, wanted);
  }
}

absl::Status FillTailWalkArrays(bpf_object* obj) {
  for (const Chain& c : kChains) {
    bpf_program* walk = bpf_object__find_program_by_name(obj, c.walk);
    bpf_map* array = bpf_object__find_map_by_name(obj, c.array);
    if (!walk || !array || !bpf_program__autoload(walk)) continue;
    const uint32_t key = 0;
    const int fd = bpf_program__fd(walk);
    if (bpf_map_update_elem(bpf_map__fd(array), &key, &fd, BPF_ANY) != 0) {
      return absl::InternalError(absl::StrCat("putting ", c.walk, " into the program array ",
                                              c.array, ": ", std::strerror(errno)));
    }
  }
  return absl::OkStatus();
}

}  // namespace ehprof
