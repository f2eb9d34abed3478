// HotSpot's description of itself (vmStructs.cpp), read from a live JVM:
// the tables libjvm.so exports (gHotSpotVMStructs: each field's type,
// name, offset or static address; gHotSpotVMTypes: each type's size and
// superclass; gHotSpotVMIntConstants, gHotSpotVMLongConstants) and the
// strides and offsets that say how their entries are laid out, which are
// themselves data in the process. Every pointer, count and string comes
// from another process and is bounded before use.
#ifndef EHPROF_AGENT_JVM_VM_STRUCTS_H_
#define EHPROF_AGENT_JVM_VM_STRUCTS_H_

#include <cstdint>
#include <optional>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "agent/process/process_memory.h"

namespace ehprof {

class PagedMemory;

// Runtime addresses of libjvm.so's exported gHotSpotVM* symbols, by name.
using VmSymbols = absl::flat_hash_map<std::string, uint64_t>;

struct VmField {
  std::string type;      // the type string: "int", "address", "Method*"; may be empty
  uint64_t offset = 0;   // in the object (non-static)
  uint64_t address = 0;  // a static field's address
  bool is_static = false;
};

// Limits on what a JVM's tables may hold: HotSpot 17 has about 800
// fields, 800 types and 400 constants, names well under 100 bytes.
inline constexpr size_t kMaxVmEntries = 4096;
inline constexpr size_t kMaxVmString = 256;

class VmStructs {
 public:
  // Reads the four tables through mem; `symbols` must hold every
  // gHotSpotVM* symbol the reading needs (the error names a missing one).
  static absl::StatusOr<VmStructs> Read(const ProcessMemory& mem, const VmSymbols& symbols);

  // type::field, in type or else its superclasses (nmethod::_method is
  // CompiledMethod's on JDK 17).
  const VmField* Field(absl::string_view type, absl::string_view field) const;
  std::optional<uint64_t> Size(absl::string_view type) const;
  // An int or long constant ("frame::interpreter_frame_sender_sp_offset").
  std::optional<int64_t> Constant(absl::string_view name) const;
  size_t field_count() const { return fields_.size(); }
  size_t type_count() const { return types_.size(); }
  size_t constant_count() const { return constants_.size(); }

 private:
  struct Type {
    std::string superclass;
    uint64_t size = 0;
  };
  absl::Status ReadFields(PagedMemory& mem, const VmSymbols& symbols);
  absl::Status ReadTypes(PagedMemory& mem, const VmSymbols& symbols);
  absl::Status ReadConstants(PagedMemory& mem, const VmSymbols& symbols, absl::string_view kind);

  absl::flat_hash_map<std::string, VmField> fields_;  // "Type::field"
  absl::flat_hash_map<std::string, Type> types_;
  absl::flat_hash_map<std::string, int64_t> constants_;
};

// A NUL-terminated string of at most kMaxVmString bytes at addr (read a
// page at a time, so a string that ends just before an unmapped page
// reads); an error when unreadable or unterminated.
absl::StatusOr<std::string> ReadVmString(const ProcessMemory& mem, uint64_t addr);

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_VM_STRUCTS_H_
