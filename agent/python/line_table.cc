#include "agent/python/line_table.h"

#include <algorithm>

namespace ehprof {

namespace {

// A cap on ranges, however long a hostile table claims to be.
constexpr size_t kMaxRanges = 1 << 20;

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  bool done() const { return at_ >= b_.size(); }
  bool Byte(uint8_t* out) {
    if (at_ >= b_.size()) return false;
    *out = b_[at_++];
    return true;
  }
  // 6-bit chunks, bit 6 set when another follows.
  bool Varint(uint32_t* out) {
    uint8_t c;
    if (!Byte(&c)) return false;
    uint32_t v = c & 63;
    for (int shift = 6; c & 64; shift += 6) {
      if (shift > 30 || !Byte(&c)) return false;
      v |= static_cast<uint32_t>(c & 63) << shift;
    }
    *out = v;
    return true;
  }
  bool Svarint(int32_t* out) {
    uint32_t u;
    if (!Varint(&u)) return false;
    *out = (u & 1) ? -static_cast<int32_t>(u >> 1) : static_cast<int32_t>(u >> 1);
    return true;
  }
  // Skips to the next entry start (a byte with bit 7 set).
  void SkipToEntry() {
    while (at_ < b_.size() && !(b_[at_] & 0x80)) ++at_;
  }

 private:
  std::span<const uint8_t> b_;
  size_t at_ = 0;
};

}  // namespace

std::vector<LineRange> DecodePep626(std::span<const uint8_t> table, int32_t first_line) {
  std::vector<LineRange> out;
  int64_t line = first_line;
  uint64_t end = 0;
  for (size_t i = 0; i + 1 < table.size() && out.size() < kMaxRanges; i += 2) {
    const uint64_t start = end;
    end += table[i];
    const int8_t delta = static_cast<int8_t>(table[i + 1]);
    int32_t this_line = -1;
    if (delta != -128) {
      line += delta;
      this_line = static_cast<int32_t>(line);
    }
    // Byte offsets to code units.
    if (end / 2 > UINT32_MAX) break;
    // A hostile table may give odd byte deltas: ranges are whole code units.
    if (end / 2 > start / 2) {
      out.push_back({static_cast<uint32_t>(start / 2), static_cast<uint32_t>(end / 2), this_line});
    }
  }
  return out;
}

std::vector<LineRange> DecodePep657(std::span<const uint8_t> table, int32_t first_line) {
  std::vector<LineRange> out;
  Reader r(table);
  int64_t line = first_line;
  uint64_t at = 0;
  while (!r.done() && out.size() < kMaxRanges) {
    uint8_t first;
    if (!r.Byte(&first) || !(first & 0x80)) break;
    const int code = (first >> 3) & 15;
    const uint32_t length = (first & 7) + 1;
    int32_t this_line = -1;
    bool ok = true;
    if (code == 15) {
      this_line = -1;
    } else if (code == 14) {
      int32_t delta;
      uint32_t skip;
      ok = r.Svarint(&delta) && r.Varint(&skip) && r.Varint(&skip) && r.Varint(&skip);
      line += delta;
      this_line = static_cast<int32_t>(line);
    } else if (code == 13) {
      int32_t delta;
      ok = r.Svarint(&delta);
      line += delta;
      this_line = static_cast<int32_t>(line);
    } else if (code >= 10) {
      uint8_t skip;
      ok = r.Byte(&skip) && r.Byte(&skip);
      line += code - 10;
      this_line = static_cast<int32_t>(line);
    } else {
      uint8_t skip;
      ok = r.Byte(&skip);
      this_line = static_cast<int32_t>(line);
    }
    if (!ok) break;
    if (at + length > UINT32_MAX) break;
    out.push_back({static_cast<uint32_t>(at), static_cast<uint32_t>(at + length), this_line});
    at += length;
    r.SkipToEntry();
  }
  return out;
}

int32_t LineAt(const std::vector<LineRange>& ranges, uint32_t index) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), index,
                             [](uint32_t i, const LineRange& r) { return i < r.end; });
  if (it == ranges.end() || index < it->start) return -1;
  return it->line;
}

}  // namespace ehprof
