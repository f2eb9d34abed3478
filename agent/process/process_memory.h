// Another process's memory, read with process_vm_readv: every read may
// fail (the process exited, the range is not mapped), and says so; and the
// text made of what runtimes keep there (agent/python/, agent/v8/).
#ifndef EHPROF_AGENT_PROCESS_PROCESS_MEMORY_H_
#define EHPROF_AGENT_PROCESS_PROCESS_MEMORY_H_

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <string>

namespace ehprof {

// Reads fail (false) when the process is gone or the range is not mapped.
class ProcessMemory {
 public:
  explicit ProcessMemory(pid_t pid) : pid_(pid) {}
  bool Read(uint64_t addr, void* out, size_t len) const;
  bool ReadU64(uint64_t addr, uint64_t* out) const { return Read(addr, out, sizeof(*out)); }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_;
};

// Appends code point c as UTF-8; U+FFFD for a value no code point is.
void AppendUtf8(uint32_t c, std::string* out);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PROCESS_PROCESS_MEMORY_H_
