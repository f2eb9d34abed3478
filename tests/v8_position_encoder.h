// V8's source position table encoding, written after
// src/codegen/source-position-table.cc for the agent/v8 tests to build
// tables with: zig-zag VLQ deltas of the code offset (from -1; negative for
// a non-statement) and of the 64-bit SourcePosition (script offset + 1 in
// bits 1-30, inlining id + 1 in bits 31-46).
#ifndef EHPROF_TESTS_V8_POSITION_ENCODER_H_
#define EHPROF_TESTS_V8_POSITION_ENCODER_H_

#include <cstdint>
#include <vector>

namespace ehprof::testing {

inline uint64_t V8RawPosition(int32_t script_offset, int32_t inlining_id) {
  return (static_cast<uint64_t>(script_offset + 1) << 1) | (static_cast<uint64_t>(inlining_id + 1) << 31);
}

inline void PutV8Vlq(int64_t v, std::vector<uint8_t>* out) {
  uint64_t z = (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
  do {
    out->push_back(static_cast<uint8_t>((z & 0x7f) | (z > 0x7f ? 0x80 : 0)));
    z >>= 7;
  } while (z);
}

struct V8TableEntry {
  int32_t code_offset, script_offset, inlining_id;
  bool statement = true;
};

inline std::vector<uint8_t> EncodeV8Table(const std::vector<V8TableEntry>& entries) {
  std::vector<uint8_t> out;
  int64_t code = -1, pos = 0;
  for (const V8TableEntry& e : entries) {
    const int64_t delta = e.code_offset - code;
    PutV8Vlq(e.statement ? delta : -delta - 1, &out);
    const int64_t raw = static_cast<int64_t>(V8RawPosition(e.script_offset, e.inlining_id));
    PutV8Vlq(raw - pos, &out);
    code = e.code_offset;
    pos = raw;
  }
  return out;
}

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_V8_POSITION_ENCODER_H_
