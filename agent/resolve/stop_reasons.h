// Human names of enum ehp_stop_reason, for summaries and reports.
#ifndef EHPROF_AGENT_RESOLVE_STOP_REASONS_H_
#define EHPROF_AGENT_RESOLVE_STOP_REASONS_H_

#include "bpf/ehprof_abi.h"

namespace ehprof {

inline const char* StopReasonName(unsigned reason) {
  switch (reason) {
    case EHP_STOP_NONE: return "none";
    case EHP_STOP_END_OF_STACK: return "end of stack";
    case EHP_STOP_NO_PROC: return "process not yet known";
    case EHP_STOP_NO_MAPPING: return "pc outside known mappings";
    case EHP_STOP_NO_TABLE: return "table not loaded yet";
    case EHP_STOP_NO_CFI: return "no CFI for pc";
    case EHP_STOP_UNSUPPORTED_RULE: return "unsupported CFI rule";
    case EHP_STOP_READ_FAULT: return "stack read fault";
    case EHP_STOP_DEPTH_LIMIT: return "depth limit";
    case EHP_STOP_BAD_FRAME: return "bad frame";
    case EHP_STOP_FP_END: return "frame-pointer chain ended";
    case EHP_STOP_NO_USER_STACK: return "no user stack (kernel thread)";
    case EHP_STOP_NOT_WALKED: return "user stack not requested";
    default: return "unknown";
  }
}

}  // namespace ehprof

#endif  // EHPROF_AGENT_RESOLVE_STOP_REASONS_H_
