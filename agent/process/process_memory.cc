#include "agent/process/process_memory.h"

#include <sys/uio.h>

namespace ehprof {

bool ProcessMemory::Read(uint64_t addr, void* out, size_t len) const {
  struct iovec local = {out, len};
  struct iovec remote = {reinterpret_cast<void*>(addr), len};
  return process_vm_readv(pid_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

}  // namespace ehprof
