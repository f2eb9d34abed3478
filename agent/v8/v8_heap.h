// Objects of a live V8 heap read for naming: strings (sequential, cons,
// thin, sliced; one and two bytes), a SharedFunctionInfo's name (its own
// String or its ScopeInfo's function name) and its Script's name. Every
// length and depth is bounded; an object that is not what its map says is
// an error, never a guessed name.
#ifndef EHPROF_AGENT_V8_V8_HEAP_H_
#define EHPROF_AGENT_V8_V8_HEAP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "agent/process/process_memory.h"
#include "agent/v8/v8_layout.h"

namespace ehprof {

// The longest name kept (bytes of UTF-8); longer ones end in "...".
inline constexpr size_t kMaxV8NameBytes = 512;

struct V8Function {
  std::string name;    // "" for an anonymous function
  std::string script;  // the Script's name (a url or path); "" when it has none
  // Where the function starts in its script's source (a character offset;
  // -1 unknown): line numbers come from it.
  int32_t start_position = -1;
  uint64_t script_addr = 0;  // the Script (untagged); 0: none
};

class V8Heap {
 public:
  V8Heap(const ProcessMemory& mem, const V8Layout& layout) : mem_(mem), l_(layout) {}
  // The instance type of the object at tagged pointer `tagged`.
  std::optional<uint16_t> TypeOf(uint64_t tagged) const;
  // The tagged field at `offset` of the object at tagged pointer `obj`.
  std::optional<uint64_t> Field(uint64_t obj, uint32_t offset) const;
  // The value of a Smi, nullopt for anything else.
  std::optional<int64_t> Smi(uint64_t raw) const;
  // The String at tagged pointer `tagged`, as UTF-8.
  absl::StatusOr<std::string> ReadString(uint64_t tagged) const;
  // The SharedFunctionInfo at untagged address `sfi`.
  absl::StatusOr<V8Function> ReadFunction(uint64_t sfi) const;
  // The positions of the line ends of the Script at untagged address
  // `script`, ascending: V8's own, else counted in its source.
  absl::StatusOr<std::vector<int32_t>> ReadLineEnds(uint64_t script) const;

 private:
  bool IsString(uint16_t type) const { return (type & l_.is_not_string_mask) == 0; }
  // Appends the string's UTF-16 units from `from` on, up to `limit` in all,
  // taking one of *pieces for each string object it reads (a cons string's
  // halves may both be the same deeper one: 2^depth objects otherwise).
  absl::Status AppendString(uint64_t tagged, uint32_t from, int depth, size_t limit,
                            std::vector<uint16_t>* out, int* pieces) const;
  absl::Status AppendSeq(uint64_t tagged, uint16_t type, uint32_t from, uint32_t length, size_t limit,
                         std::vector<uint16_t>* out) const;
  // Line ends counted in the Script's source (V8 computes its own lazily).
  absl::StatusOr<std::vector<int32_t>> SourceLineEnds(uint64_t script_tagged) const;
  // The function name and start position kept in a ScopeInfo.
  void FromScopeInfo(uint64_t scope_info, V8Function* f) const;

  const ProcessMemory& mem_;
  const V8Layout& l_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_V8_V8_HEAP_H_
