#include "agent/process/process_memory.h"

#include <sys/uio.h>

namespace ehprof {

bool ProcessMemory::Read(uint64_t addr, void* out, size_t len) const {
  if (len == 0) return true;
  if (addr + len < addr) return false;
  struct iovec local = {out, len};
  struct iovec remote = {reinterpret_cast<void*>(addr), len};
  return process_vm_readv(pid_, &local, 1, &remote, 1, 0) == static_cast<ssize_t>(len);
}

void AppendUtf8(uint32_t c, std::string* out) {
  if (c < 0x80) {
    out->push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (c >> 6)));
    out->push_back(static_cast<char>(0x80 | (c & 63)));
  } else if (c < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (c >> 12)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 63)));
    out->push_back(static_cast<char>(0x80 | (c & 63)));
  } else if (c < 0x110000) {
    out->push_back(static_cast<char>(0xf0 | (c >> 18)));
    out->push_back(static_cast<char>(0x80 | ((c >> 12) & 63)));
    out->push_back(static_cast<char>(0x80 | ((c >> 6) & 63)));
    out->push_back(static_cast<char>(0x80 | (c & 63)));
  } else {
    out->append("\xef\xbf\xbd");  // U+FFFD
  }
}

}  // namespace ehprof
