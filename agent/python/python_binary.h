// What ehprof needs to know of one CPython interpreter binary (a static
// python3.X or a libpython3.X.so), read from the file: its version, where
// the eval loop is, where _PyRuntime and PyCode_Type are, and the offsets
// that lead from _PyRuntime to a thread's frames. 3.13+ from the
// _Py_DebugOffsets at the start of _PyRuntime (the file's here; the
// tracker reads the process's own again before use); 3.10-3.12 (which have none)
// from offsets measured on those versions' builds (agent/python/
// python_offsets.cc), checked against the running process before use.
#ifndef EHPROF_AGENT_PYTHON_PYTHON_BINARY_H_
#define EHPROF_AGENT_PYTHON_PYTHON_BINARY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bpf/ehprof_abi.h"
#include "elf/elf_file.h"

namespace ehprof {

struct AddrRange {
  uint64_t begin = 0, end = 0;  // ELF virtual addresses
};

struct PythonBinary {
  std::string path;
  int major = 0, minor = 0;
  // The eval loop: _PyEval_EvalFrameDefault, then its .cold part when the
  // file names it or the FDE that the function's jumps lead to is found.
  std::vector<AddrRange> eval;
  bool eval_cold_found = false;
  uint64_t runtime = 0;    // _PyRuntime
  uint64_t code_type = 0;  // PyCode_Type
  uint64_t py_version = 0; // Py_Version (0: none, before 3.11)
  uint32_t py_version_value = 0;
  // The frame walk's offsets; eval ranges and interp_head relative to the
  // file (interp_head: _PyRuntime + offset).
  ehp_py_proc layout{};
  std::vector<ElfSegment> loads;  // PT_LOAD segments: runtime bias from a mapping
  // Unicode object header size (PyASCIIObject), 48 before 3.12, 40 after.
  uint32_t ascii_header = 0;
};

// nullopt: not a CPython interpreter (no _PyRuntime or eval loop).
// An error: it is one, but not one ehprof can read (the message names the
// file and why: an unknown version, a debug-offsets block that does not
// match).
// `path`: the file's name as the process maps it (messages, and 3.10's
// version from its name), which may differ from the path it was opened by.
absl::StatusOr<std::optional<PythonBinary>> InspectPythonBinary(const ElfFile& elf,
                                                                const std::string& path);

// The version from a file name "python3.10", "libpython3.10.so.1.0": 3.10
// has no Py_Version. 0 when the name carries none, or a number no minor
// version is (above 255, however many digits).
int MinorFromFileName(const std::string& path);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PYTHON_PYTHON_BINARY_H_
