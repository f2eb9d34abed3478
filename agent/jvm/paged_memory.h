// Another process's memory read a page at a time, each page once: the
// VMStructs tables and the names they point to lie in a few dozen pages
// of libjvm.so, read as thousands of small pieces (one system call each,
// 50 ms a JVM, without this). Holds at most kMaxPages; past them, reads
// go straight to the process.
#ifndef EHPROF_AGENT_JVM_PAGED_MEMORY_H_
#define EHPROF_AGENT_JVM_PAGED_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "agent/process/process_memory.h"

namespace ehprof {

class PagedMemory {
 public:
  static constexpr uint64_t kPage = 4096;
  static constexpr size_t kMaxPages = 1024;

  explicit PagedMemory(const ProcessMemory& mem) : mem_(mem) {}
  // false when any byte of [addr, addr + len) is unreadable.
  bool Read(uint64_t addr, void* out, size_t len);
  bool ReadU64(uint64_t addr, uint64_t* out) { return Read(addr, out, sizeof(*out)); }

 private:
  const ProcessMemory& mem_;
  absl::flat_hash_map<uint64_t, std::unique_ptr<uint8_t[]>> pages_;  // null: unreadable
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_PAGED_MEMORY_H_
