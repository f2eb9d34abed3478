// V8's source positions as its code objects keep them: the source
// position table (src/codegen/source-position-table.cc: per entry a
// zig-zag VLQ code offset delta, negative for a non-statement, then a
// zig-zag VLQ delta of the 64-bit SourcePosition; deltas from code offset
// -1 and position 0), the SourcePosition bits (src/codegen/
// source-position.h: bit 0 external, bits 1-30 script offset + 1, bits
// 31-46 inlining id + 1) and DeoptimizationData's InliningPositions
// (PodArray<InliningPosition>: the call site in the caller as a
// SourcePosition, then the inlined function's index in the literal array).
// Pure decoding of bytes already read: every count is bounded, a table that
// does not decode is an error.
#ifndef EHPROF_AGENT_V8_V8_POSITIONS_H_
#define EHPROF_AGENT_V8_V8_POSITIONS_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace ehprof {

// One SourcePosition: a character offset into the script of the function
// at inlining id `inlining_id` (-1: the code's own function). script_offset
// -1: not known (an external position, or none recorded).
struct V8SourcePosition {
  int32_t script_offset = -1;
  int32_t inlining_id = -1;
};

// A table entry: from code_offset on (bytes from the instruction start, or
// the bytecode offset of a BytecodeArray's table) the code runs `position`.
struct V8PositionEntry {
  int32_t code_offset = 0;
  V8SourcePosition position;
};

// Entries decoded at most (a longer table is refused, not cut).
inline constexpr size_t kMaxV8PositionEntries = 1 << 20;

V8SourcePosition DecodeV8SourcePosition(uint64_t raw);

// The entries of a source position table, code offsets ascending.
absl::StatusOr<std::vector<V8PositionEntry>> DecodeV8PositionTable(std::span<const uint8_t> bytes);

// The entry in effect at `code_offset`: the last one at or before it;
// nullptr when there is none.
const V8PositionEntry* V8PositionAt(const std::vector<V8PositionEntry>& table, int32_t code_offset);

// One function TurboFan inlined: where its caller calls it (a position of
// the caller, whose inlining id is the caller's) and its index in the
// DeoptimizationData's literal array.
struct V8InliningPosition {
  V8SourcePosition call;
  int32_t function = -1;
};

// Bytes per InliningPosition (a SourcePosition, an int, padding to 8).
inline constexpr size_t kV8InliningPositionBytes = 16;

// The InliningPositions array's entries, indexed by inlining id.
absl::StatusOr<std::vector<V8InliningPosition>> DecodeV8InliningPositions(std::span<const uint8_t> bytes);

}  // namespace ehprof

#endif  // EHPROF_AGENT_V8_V8_POSITIONS_H_
