// The walk's offsets of CPython 3.13+ from the _Py_DebugOffsets block that
// starts _PyRuntime: the interpreter's own description of its structures
// (cookie "xdebugpy", its version, whether free-threaded, then per
// structure its size and the offsets of its fields). Which version puts
// which structure where in the block is the one thing known here; every
// offset comes from the bytes, each bounded by its structure's size.
#ifndef EHPROF_AGENT_PYTHON_DEBUG_OFFSETS_H_
#define EHPROF_AGENT_PYTHON_DEBUG_OFFSETS_H_

#include <cstdint>
#include <span>

#include "absl/status/statusor.h"
#include "agent/process/process_memory.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

// The bytes of _Py_DebugOffsets read: up to the end of the frame's part
// in 3.14's block (the largest prefix a known version needs).
constexpr size_t kDebugOffsetsSize = 312;

// From the _Py_DebugOffsets bytes at _PyRuntime: its cookie, its version
// equal to Py_Version's (3.13 or 3.14), a GIL build, sizes and offsets in
// bounds. interp_head is relative to _PyRuntime. An error says, in one
// line, what was wrong.
absl::StatusOr<ehp_py_proc> LayoutFromDebugOffsets(std::span<const uint8_t> bytes, uint32_t py_version);

// The same from the process's memory at runtime (_PyRuntime's address in
// it): what the process itself says, patched or not.
absl::StatusOr<ehp_py_proc> LayoutFromProcess(const ProcessMemory& mem, uint64_t runtime, uint32_t py_version);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PYTHON_DEBUG_OFFSETS_H_
