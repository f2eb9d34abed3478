// A read-only mapping of part of a file (MAP_PRIVATE), unmapped when it
// goes. Its pages become resident only when read (one at a time:
// MADV_RANDOM), and are file-backed: the kernel can drop them again under
// memory pressure.
#ifndef EHPROF_BASE_MAPPED_RANGE_H_
#define EHPROF_BASE_MAPPED_RANGE_H_

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <utility>

namespace ehprof {

class MappedRange {
 public:
  MappedRange() = default;
  // [offset, offset + size) of `fd`; empty (data() nullptr) when mmap fails.
  MappedRange(int fd, uint64_t offset, uint64_t size) {
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t start = offset / page * page;
    const size_t len = static_cast<size_t>(offset - start + size);
    if (size == 0) return;
    void* p = mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(start));
    if (p == MAP_FAILED) return;
    // Lookups are scattered: no read-around, no fault-around (the kernel
    // would map 16 neighbouring pages on each fault, resident for nothing).
    madvise(p, len, MADV_RANDOM);
    base_ = p;
    len_ = len;
    data_ = static_cast<const char*>(p) + (offset - start);
    size_ = size;
  }
  MappedRange(MappedRange&& o) noexcept { *this = std::move(o); }
  MappedRange& operator=(MappedRange&& o) noexcept {
    if (this != &o) {
      Reset();
      std::swap(base_, o.base_);
      std::swap(len_, o.len_);
      std::swap(data_, o.data_);
      std::swap(size_, o.size_);
    }
    return *this;
  }
  MappedRange(const MappedRange&) = delete;
  MappedRange& operator=(const MappedRange&) = delete;
  ~MappedRange() { Reset(); }

  const char* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Drops the pages read so far from this process's memory (they stay in
  // the page cache, and reading them again maps them again). Safe: the
  // mapping is read-only, so no page holds a private change to lose.
  void DropResident() const {
    if (base_ != nullptr) madvise(base_, len_, MADV_DONTNEED);
  }

 private:
  void Reset() {
    if (base_ != nullptr) munmap(base_, len_);
    base_ = nullptr;
    data_ = nullptr;
    len_ = size_ = 0;
  }
  void* base_ = nullptr;
  size_t len_ = 0;
  const char* data_ = nullptr;
  uint64_t size_ = 0;
};

}  // namespace ehprof

#endif  // EHPROF_BASE_MAPPED_RANGE_H_
