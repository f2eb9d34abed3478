#include "agent/jvm/paged_memory.h"

#include <algorithm>
#include <cstring>

namespace ehprof {

bool PagedMemory::Read(uint64_t addr, void* out, size_t len) {
  if (addr + len < addr) return false;
  auto* o = static_cast<uint8_t*>(out);
  while (len > 0) {
    const uint64_t page = addr & ~(kPage - 1);
    const size_t n = static_cast<size_t>(std::min<uint64_t>(len, page + kPage - addr));
    auto it = pages_.find(page);
    if (it == pages_.end() && pages_.size() < kMaxPages) {
      auto bytes = std::make_unique<uint8_t[]>(kPage);
      if (!mem_.Read(page, bytes.get(), kPage)) bytes.reset();
      it = pages_.emplace(page, std::move(bytes)).first;
    }
    if (it == pages_.end()) {
      if (!mem_.Read(addr, o, n)) return false;
    } else {
      if (!it->second) return false;
      std::memcpy(o, it->second.get() + (addr - page), n);
    }
    addr += n;
    o += n;
    len -= n;
  }
  return true;
}

}  // namespace ehprof
