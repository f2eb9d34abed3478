#include "agent/v8/v8_positions.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"

namespace ehprof {

namespace {

// A VLQ of a 64-bit value takes at most 10 bytes of 7 bits.
constexpr int kMaxVlqBytes = 10;
// The largest code offset a table may reach (V8's code is far smaller).
constexpr int64_t kMaxCodeOffset = std::numeric_limits<int32_t>::max();

// One zig-zag VLQ (V8's DecodeInt): 7 bits a byte, low first, bit 7 set
// while more follow.
bool DecodeVlq(std::span<const uint8_t> bytes, size_t* at, int64_t* out) {
  uint64_t v = 0;
  for (int i = 0; i < kMaxVlqBytes; ++i) {
    if (*at >= bytes.size()) return false;
    const uint8_t b = bytes[(*at)++];
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      *out = static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
      return true;
    }
  }
  return false;
}

}  // namespace

V8SourcePosition DecodeV8SourcePosition(uint64_t raw) {
  V8SourcePosition p;
  // An external position (a line of another file, wasm) has no offset here.
  if ((raw & 1) == 0) p.script_offset = static_cast<int32_t>((raw >> 1) & ((uint64_t{1} << 30) - 1)) - 1;
  p.inlining_id = static_cast<int32_t>((raw >> 31) & 0xffff) - 1;
  return p;
}

absl::StatusOr<std::vector<V8PositionEntry>> DecodeV8PositionTable(std::span<const uint8_t> bytes) {
  std::vector<V8PositionEntry> out;
  int64_t code_offset = -1;  // V8's kFunctionEntryBytecodeOffset
  int64_t position = 0;
  size_t at = 0;
  while (at < bytes.size()) {
    if (out.size() >= kMaxV8PositionEntries) {
      return absl::FailedPreconditionError(absl::StrCat("source position table of more than ",
                                                        kMaxV8PositionEntries, " entries"));
    }
    int64_t delta = 0, position_delta = 0;
    if (!DecodeVlq(bytes, &at, &delta) || !DecodeVlq(bytes, &at, &position_delta)) {
      return absl::FailedPreconditionError(absl::StrCat("source position table cut at byte ", at));
    }
    // The code offset's delta is never negative: its sign says whether the
    // entry is a statement's.
    code_offset += delta >= 0 ? delta : -(delta + 1);
    if (code_offset > kMaxCodeOffset) return absl::FailedPreconditionError("source position table past 2^31");
    // Wraps as V8's int64 arithmetic would not: a junk table decodes to
    // junk positions, which the bounds of the callers refuse.
    position = static_cast<int64_t>(static_cast<uint64_t>(position) + static_cast<uint64_t>(position_delta));
    out.push_back({static_cast<int32_t>(code_offset), DecodeV8SourcePosition(static_cast<uint64_t>(position))});
  }
  return out;
}

const V8PositionEntry* V8PositionAt(const std::vector<V8PositionEntry>& table, int32_t code_offset) {
  auto it = std::upper_bound(table.begin(), table.end(), code_offset,
                             [](int32_t off, const V8PositionEntry& e) { return off < e.code_offset; });
  return it == table.begin() ? nullptr : &*(it - 1);
}

absl::StatusOr<std::vector<V8InliningPosition>> DecodeV8InliningPositions(std::span<const uint8_t> bytes) {
  if (bytes.size() % kV8InliningPositionBytes != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("inlining positions of ", bytes.size(), " bytes, not a multiple of ", kV8InliningPositionBytes));
  }
  std::vector<V8InliningPosition> out(bytes.size() / kV8InliningPositionBytes);
  for (size_t i = 0; i < out.size(); ++i) {
    uint64_t raw = 0;
    int32_t function = 0;
    std::memcpy(&raw, bytes.data() + i * kV8InliningPositionBytes, sizeof(raw));
    std::memcpy(&function, bytes.data() + i * kV8InliningPositionBytes + sizeof(raw), sizeof(function));
    out[i] = {DecodeV8SourcePosition(raw), function};
  }
  return out;
}

}  // namespace ehprof
