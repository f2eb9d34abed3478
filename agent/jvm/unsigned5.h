// HotSpot's variable-length unsigned numbers, as its line number tables
// and debug info (scope descriptors) store them.
#ifndef EHPROF_AGENT_JVM_UNSIGNED5_H_
#define EHPROF_AGENT_JVM_UNSIGNED5_H_

#include <cstddef>
#include <cstdint>
#include <span>

namespace ehprof {

// UNSIGNED5 (HotSpot utilities/unsigned5.hpp, and CompressedReadStream
// before JDK 20): up to five bytes, little-endian in base 64 past the
// first; a byte below 192 is the last. JDK 20+ stores every byte plus 1
// so that none is 0.
class Unsigned5 {
 public:
  Unsigned5(std::span<const uint8_t> bytes, int x) : bytes_(bytes), x_(static_cast<uint32_t>(x)) {}
  bool Byte(uint8_t* b) {
    if (at_ >= bytes_.size()) return false;
    *b = bytes_[at_++];
    return true;
  }
  bool Uint(uint32_t* out) {
    uint32_t sum = 0;
    for (int i = 0, shift = 0; i < 5; ++i, shift += 6) {
      uint8_t b = 0;
      if (!Byte(&b) || b < x_) return false;
      sum += (b - x_) << shift;
      if (b < 192) break;
    }
    *out = sum;
    return true;
  }
  bool Signed(int32_t* out) {
    uint32_t v = 0;
    if (!Uint(&v)) return false;
    *out = static_cast<int32_t>(v >> 1) ^ -static_cast<int32_t>(v & 1);
    return true;
  }

 private:
  std::span<const uint8_t> bytes_;
  uint32_t x_;
  size_t at_ = 0;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_UNSIGNED5_H_
