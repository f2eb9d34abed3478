// First-fit allocator of index ranges in a fixed-size BPF array map.
#ifndef EHPROF_AGENT_TABLES_RANGE_ALLOCATOR_H_
#define EHPROF_AGENT_TABLES_RANGE_ALLOCATOR_H_

#include <cstdint>
#include <map>
#include <optional>

namespace ehprof {

class RangeAllocator {
 public:
  explicit RangeAllocator(uint32_t capacity) : capacity_(capacity) {
    if (capacity) free_[0] = capacity;
  }
  // The start of `n` consecutive free indexes, or nullopt when no free run is
  // long enough. n == 0 always succeeds (at 0, nothing reserved).
  std::optional<uint32_t> Allocate(uint32_t n) {
    if (n == 0) return 0;
    for (auto it = free_.begin(); it != free_.end(); ++it) {
      if (it->second < n) continue;
      const uint32_t start = it->first, len = it->second;
      free_.erase(it);
      if (len > n) free_[start + n] = len - n;
      used_ += n;
      return start;
    }
    return std::nullopt;
  }
  void Free(uint32_t start, uint32_t n) {
    if (n == 0) return;
    used_ -= n;
    auto [it, _] = free_.emplace(start, n);
    auto next = std::next(it);
    if (next != free_.end() && it->first + it->second == next->first) {
      it->second += next->second;
      free_.erase(next);
    }
    if (it != free_.begin()) {
      auto prev = std::prev(it);
      if (prev->first + prev->second == it->first) {
        prev->second += it->second;
        free_.erase(it);
      }
    }
  }
  uint32_t capacity() const { return capacity_; }
  uint32_t used() const { return used_; }

 private:
  uint32_t capacity_;
  uint32_t used_ = 0;
  std::map<uint32_t, uint32_t> free_;  // start -> length, disjoint, merged
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_TABLES_RANGE_ALLOCATOR_H_
