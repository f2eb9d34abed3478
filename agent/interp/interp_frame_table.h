// The frames of the interpreters agent/interp/ trackers name (Ruby, PHP,
// Perl), interned: one table for the recording (or the agent's interval),
// which the trackers fill and the resolver and outputs read. An entry is
// whole (function, file, line) because the process that had it may be gone
// by the time the samples are resolved.
#ifndef EHPROF_AGENT_INTERP_INTERP_FRAME_TABLE_H_
#define EHPROF_AGENT_INTERP_INTERP_FRAME_TABLE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

struct InterpFrameName {
  ehp_interp_kind kind = EHP_INTERP_RUBY;
  std::string function;  // "Class#method", "Class::method", "block in foo"
  std::string file;      // the source file as the interpreter names it; "" none
  int32_t line = -1;     // -1 unknown
  // A frame of native code the interpreter runs as one of its own (a Ruby
  // C method, a PHP internal function): named, with no file or line.
  bool native = false;
  bool operator==(const InterpFrameName&) const = default;
};

class InterpFrameTable {
 public:
  // The index of `name`, added when new. Index 0 is never handed out: a
  // word with index 0 is a frame nothing named ("[KIND unknown]").
  uint32_t Add(const InterpFrameName& name);
  // The sample word for the frame at `index`: EHP_FRAME_INTERP, its kind,
  // the index in bits 0-56.
  uint64_t Word(uint32_t index) const;
  // The frame a named word stands for; a word whose index the table does
  // not hold (0, or from before a Clear) names "[KIND unknown]".
  InterpFrameName Name(uint64_t word) const;
  size_t size() const { return names_.size(); }
  // Bytes held, roughly (the agent's memory gauge).
  size_t Bytes() const;
  void Clear();

 private:
  struct Hash {
    size_t operator()(const InterpFrameName& n) const;
  };
  std::vector<InterpFrameName> names_;  // [0] unused
  absl::flat_hash_map<InterpFrameName, uint32_t, Hash> index_;
};

// "ruby", "php", "perl": the runtime's name in labels and unknown frames.
const char* InterpKindName(ehp_interp_kind kind);

}  // namespace ehprof

#endif  // EHPROF_AGENT_INTERP_INTERP_FRAME_TABLE_H_
