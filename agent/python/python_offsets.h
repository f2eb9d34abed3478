// The offsets of the structures between _PyRuntime and a frame, per
// CPython version: 3.10-3.12 carry no description of themselves, so these
// are measured on their builds (gdb's ptype/o on pyenv's 3.10.13, 3.11.7,
// 3.12.1, the same on Debian 12's 3.11.2) and checked against the running
// process before use; 3.13+ describes itself in _Py_DebugOffsets
// (agent/python/debug_offsets.h).
#ifndef EHPROF_AGENT_PYTHON_PYTHON_OFFSETS_H_
#define EHPROF_AGENT_PYTHON_PYTHON_OFFSETS_H_

#include <cstdint>
#include <optional>

#include "bpf/ehprof_abi.h"

namespace ehprof {

// The walk's offsets of 3.10-3.12; interp_head relative to _PyRuntime.
std::optional<ehp_py_proc> MeasuredLayout(int major, int minor);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PYTHON_PYTHON_OFFSETS_H_
