// Human names of enum ehp_stop_reason, for summaries and reports, from the
// one list in bpf/ehprof_abi.h.
#ifndef EHPROF_BPF_STOP_REASONS_H_
#define EHPROF_BPF_STOP_REASONS_H_

#include "bpf/ehprof_abi.h"

namespace ehprof {

// Every value below EHP_STOP_REASON_COUNT is in the list, once.
#define EHP_STOP_COUNT_ONE_(name, value, text) +1
static_assert(0 EHP_STOP_REASONS(EHP_STOP_COUNT_ONE_) == EHP_STOP_REASON_COUNT,
              "EHP_STOP_REASONS and EHP_STOP_REASON_COUNT disagree");
#undef EHP_STOP_COUNT_ONE_

inline const char* StopReasonName(unsigned reason) {
  switch (reason) {
#define EHP_STOP_NAME_CASE_(name, value, text) \
  case name:                                   \
    return text;
    EHP_STOP_REASONS(EHP_STOP_NAME_CASE_)
#undef EHP_STOP_NAME_CASE_
    default:
      return "unknown";
  }
}

}  // namespace ehprof

#endif  // EHPROF_BPF_STOP_REASONS_H_
