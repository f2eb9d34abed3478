// Code objects read from a live Python process (process_vm_readv): the
// field offsets from PyCode_Type.tp_members, then co_qualname (co_name on
// 3.10), co_filename, co_firstlineno and the line table. Every pointer and
// length comes from another process and is checked before use.
#ifndef EHPROF_AGENT_PYTHON_PYTHON_CODE_H_
#define EHPROF_AGENT_PYTHON_PYTHON_CODE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/process/process_memory.h"
#include "agent/python/line_table.h"

namespace ehprof {

// Where a code object keeps what names it, for one interpreter.
struct CodeFields {
  uint32_t filename = 0, name = 0, qualname = 0, firstlineno = 0, linetable = 0;
  uint32_t code_start = 0;  // 3.11+: co_code_adaptive (PyCode_Type.tp_basicsize)
  uint64_t code_type = 0;   // PyCode_Type's runtime address
  uint32_t ascii_header = 0;  // sizeof(PyASCIIObject)
  int minor = 0;
  // The header bytes one read covers (every field above lies in it).
  uint32_t header_size() const;
};

// From PyCode_Type.tp_members in the process (runtime address code_type).
absl::StatusOr<CodeFields> ReadCodeFields(const ProcessMemory& mem, uint64_t code_type, int minor,
                                          uint32_t ascii_header);

struct PythonCode {
  std::string qualname;  // "Cls.method"; "[unknown python code]" when unreadable
  std::string file;      // co_filename as the process has it
  int32_t first_line = 0;
  std::vector<LineRange> lines;
  // What identifies the object between two reads: a freed and reused code
  // object differs in at least one of these.
  uint64_t filename_ptr = 0, name_ptr = 0, linetable_ptr = 0;
};

// Reads the code object at addr: its type must be PyCode_Type.
absl::StatusOr<PythonCode> ReadCode(const ProcessMemory& mem, const CodeFields& f, uint64_t addr);
// Only the identifying pointers and first line (one read): unchanged
// since `known` was read means the same code object.
bool SameCode(const ProcessMemory& mem, const CodeFields& f, uint64_t addr, const PythonCode& known);
enum class CodeCheck { kSame, kChanged, kUnreadable };
CodeCheck CheckCode(const ProcessMemory& mem, const CodeFields& f, uint64_t addr, const PythonCode& known);

// The code unit of a frame's instruction position (EHP_PY_FRAME_OFFSET):
// 3.10 keeps the index itself, 3.11+ the byte offset from the object.
// -1 when unknown.
int64_t InstructionIndex(const CodeFields& f, uint32_t offset);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PYTHON_PYTHON_CODE_H_
