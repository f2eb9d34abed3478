// V8's compiled code at a pc: the InstructionStream holding the pc (found
// by its map word, scanning back from the pc at the code alignment), the
// Code it belongs to, and for optimized code (Maglev, TurboFan) its source
// position table and DeoptimizationData (the inlined functions and where
// each is called): the functions running at the pc, innermost first. A
// candidate counts only when its InstructionStream and Code point at each
// other and the pc lies in its instructions; freed or reused memory is an
// error, never another function's name.
#ifndef EHPROF_AGENT_V8_V8_CODE_H_
#define EHPROF_AGENT_V8_V8_CODE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/process/process_memory.h"
#include "agent/v8/v8_heap.h"
#include "agent/v8/v8_layout.h"
#include "agent/v8/v8_positions.h"

namespace ehprof {

// A function TurboFan inlined (by inlining id): its SharedFunctionInfo
// (untagged) and the position of its call in its caller.
struct V8InlinedFunction {
  uint64_t sfi = 0;
  V8SourcePosition call;
};

struct V8Code {
  uint64_t istream = 0;  // the InstructionStream (untagged)
  uint64_t code = 0;     // its Code (untagged)
  uint64_t start = 0;    // instructions [start, start + size)
  uint32_t size = 0;
  uint32_t kind = 0;      // CodeKind
  bool optimized = false;  // Maglev or TurboFan: the fields below are read
  uint64_t sfi = 0;        // the function compiled (untagged)
  uint64_t deopt_data = 0, position_table = 0;  // tagged, as read: SameV8Code compares them
  std::vector<V8PositionEntry> positions;
  std::vector<V8InlinedFunction> inlined;
};

// One function running at a pc: its SharedFunctionInfo (untagged) and the
// offset in its script it runs at (-1: not known).
struct V8Scope {
  uint64_t sfi = 0;
  int32_t script_offset = -1;
};

// Inlining depth read at most (TurboFan's own limit is far lower).
inline constexpr int kMaxV8Scopes = 64;

class V8CodeReader {
 public:
  V8CodeReader(const ProcessMemory& mem, const V8Layout& layout) : mem_(mem), l_(layout), heap_(mem, layout) {}
  // The code whose instructions hold pc. `istream_map`: the map word of
  // InstructionStreams when known (0: not yet); set once one is found.
  absl::StatusOr<V8Code> Find(uint64_t pc, uint64_t* istream_map) const;
  // The code of the InstructionStream at `istream` (untagged), checked.
  absl::StatusOr<V8Code> Read(uint64_t istream) const;
  // The positions of the BytecodeArray the SharedFunctionInfo `sfi`
  // (untagged) runs now; empty when V8 has not collected them.
  absl::StatusOr<std::vector<V8PositionEntry>> BytecodePositions(uint64_t sfi) const;
  // Whether `code` is still there: its InstructionStream (with map
  // `istream_map`, 0: checked by type) and Code point at each other and at
  // the same instructions and tables (two reads; V8 frees code and reuses
  // its memory).
  bool Same(const V8Code& code, uint64_t istream_map = 0) const;

 private:
  absl::Status ReadOptimized(uint64_t code_tagged, V8Code* out) const;
  absl::StatusOr<std::vector<uint8_t>> ByteArray(uint64_t tagged, size_t max) const;
  // Whether `word` is the map of InstructionStreams (one type read).
  bool IsIstreamMap(uint64_t word) const;

  const ProcessMemory& mem_;
  const V8Layout& l_;
  V8Heap heap_;
};

// The functions running at `code_offset` (bytes from the instruction
// start) of `code`, innermost first, the code's own function last.
absl::StatusOr<std::vector<V8Scope>> V8ScopesAt(const V8Code& code, int32_t code_offset);

}  // namespace ehprof

#endif  // EHPROF_AGENT_V8_V8_CODE_H_
