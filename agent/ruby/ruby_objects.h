// Ruby's objects as ehprof reads them from a live process: strings, arrays,
// symbols (global_symbols' ID table), iseqs (label, path, the line of an
// instruction) and method entries (a C method's name). Every read is
// bounded and checked (the object's type in its flags, lengths capped); a
// read that fails says what was wrong, never returns a guess. The layouts
// that differ between Ruby versions are probed on the process's own data
// (Probe: a known symbol's string; the first iseq: where its line table
// is), not taken from a version.
#ifndef EHPROF_AGENT_RUBY_RUBY_OBJECTS_H_
#define EHPROF_AGENT_RUBY_RUBY_OBJECTS_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "absl/status/statusor.h"
#include "agent/process/process_memory.h"

namespace ehprof {

// Where the symbol table is (runtime addresses), and what Probe found.
struct RubyObjectLayout {
  uint64_t symbols_last_id = 0, symbols_ids = 0;
  // 3.2+: RString {basic, len, ptr | embedded bytes}; before: the
  // embedded length in the flags and the bytes at +16.
  bool string_len_field = false;
  // rb_iseq_constant_body's insns_info (0: not probed yet).
  uint32_t insns_info = 0;
};

struct RubyIseq {
  std::string label, base_label, path;
  uint64_t encoded = 0;  // iseq_encoded
  uint32_t size = 0;     // iseq_size, in VALUEs
  uint64_t info_body = 0, info_succ = 0, info_positions = 0;
  uint32_t info_size = 0;
};

// The longest string read (a label, a path): longer ones are cut.
inline constexpr size_t kRubyMaxString = 1024;

class RubyObjects {
 public:
  RubyObjects(const ProcessMemory& mem, RubyObjectLayout layout) : mem_(mem), layout_(layout) {}
  // Finds the string layout: the symbol "+" (ID 43, as Ruby registers its
  // one-character operators) read both ways. An error when neither reads.
  absl::Status Probe();
  absl::StatusOr<std::string> String(uint64_t value) const;
  absl::StatusOr<uint64_t> ArrayAt(uint64_t ary, uint64_t index) const;
  absl::StatusOr<std::string> IdName(uint64_t id) const;
  // An iseq (its label, path and line table); the first one also finds
  // where insns_info is.
  absl::StatusOr<RubyIseq> Iseq(uint64_t iseq);
  // The source line of the instruction at index (pc - iseq_encoded, in
  // VALUEs, as the control frame's pc points: after the instruction).
  absl::StatusOr<int32_t> Line(const RubyIseq& iseq, uint32_t index) const;
  // The name of a method entry (through an svar that wraps one): the
  // method's original name; *is_cfunc whether it is a C method.
  absl::StatusOr<std::string> MethodName(uint64_t me, bool* is_cfunc) const;
  // The method entry a frame's ep[-2] holds (itself, or the one an svar
  // wraps); an error for anything else (a cref, false).
  absl::StatusOr<uint64_t> MethodEntry(uint64_t value) const;
  // The iseq of a Ruby method's entry (its definition of type ISEQ).
  absl::StatusOr<uint64_t> MethodIseq(uint64_t me) const;
  // What an object is: T_IMEMO's type (0-15), -1 for anything else.
  absl::StatusOr<int> ImemoType(uint64_t value) const;
  const RubyObjectLayout& layout() const { return layout_; }

 private:
  absl::StatusOr<uint64_t> U64(uint64_t addr) const;
  bool InsnsInfoAt(uint64_t body, uint32_t off, uint32_t iseq_size) const;

  const ProcessMemory& mem_;
  RubyObjectLayout layout_;
};

// Ruby's succ_index_table lookup (iseq.c succ_index_lookup) on the table's
// bytes: the rank of position x among the instruction positions that
// start a line table entry. nullopt when x lies outside the bytes given.
std::optional<uint32_t> SuccIndexLookup(std::span<const uint8_t> table, uint32_t x);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RUBY_RUBY_OBJECTS_H_
