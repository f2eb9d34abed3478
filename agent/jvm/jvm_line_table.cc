#include "agent/jvm/jvm_line_table.h"

#include "absl/strings/str_cat.h"

namespace ehprof {

namespace {

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

}  // namespace

absl::StatusOr<std::vector<JvmLine>> DecodeJvmLineTable(std::span<const uint8_t> bytes, int unsigned5_x) {
  Unsigned5 in(bytes, unsigned5_x);
  std::vector<JvmLine> out;
  uint32_t bci = 0;
  int32_t line = 0;
  for (;;) {
    uint8_t b = 0;
    if (!in.Byte(&b)) return absl::InvalidArgumentError("line table: no end");
    if (b == 0) return out;
    if (out.size() >= kMaxJvmLines) return absl::InvalidArgumentError(absl::StrCat("line table: over ", kMaxJvmLines, " lines"));
    if (b == 0xff) {
      int32_t dbci = 0, dline = 0;
      if (!in.Signed(&dbci) || !in.Signed(&dline)) return absl::InvalidArgumentError("line table: bad long delta");
      bci += static_cast<uint32_t>(dbci);
      line = static_cast<int32_t>(static_cast<uint32_t>(line) + static_cast<uint32_t>(dline));
    } else {
      bci += b >> 3;
      line += b & 7;
    }
    out.push_back({bci, line});
  }
}

int32_t JvmLineAt(const std::vector<JvmLine>& lines, uint32_t bci) {
  int32_t best_line = -1;
  uint32_t best_bci = 0;
  for (const JvmLine& l : lines) {
    if (l.bci == bci) return l.line;
    if (l.bci < bci && l.bci >= best_bci) {
      best_bci = l.bci;
      best_line = l.line;
    }
  }
  return best_line;
}

}  // namespace ehprof
