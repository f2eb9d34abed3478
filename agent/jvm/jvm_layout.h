// What ehprof reads of one JVM, from its own VMStructs: the offsets the
// BPF walk needs (struct ehp_jvm_proc, its code heaps left to
// code_heaps.h) and those that lead from a Method* to its class, name,
// source file and line table. A JVM whose tables lack one of them is
// refused, the error naming the field: never a guess.
#ifndef EHPROF_AGENT_JVM_JVM_LAYOUT_H_
#define EHPROF_AGENT_JVM_JVM_LAYOUT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "agent/jvm/vm_structs.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

// Where the code heaps are (code_heaps.h reads them).
struct CodeHeapFields {
  uint64_t heaps_addr = 0;  // &CodeCache::_heaps (a GrowableArray<CodeHeap*>*)
  uint32_t array_len = 0, array_data = 0;             // GrowableArray _len (i32), _data
  uint32_t heap_memory = 0, heap_segmap = 0, heap_log2_segment = 0;  // CodeHeap
  uint32_t space_low_boundary = 0, space_high_boundary = 0;  // VirtualSpace (reserved)
};

// From a Method* to its names (jvm_method.h reads them).
struct MethodFields {
  uint32_t method_const = 0;                       // Method::_constMethod
  uint32_t cm_constants = 0, cm_code_size = 0;     // ConstMethod (u2 code size)
  uint32_t cm_name_index = 0, cm_signature_index = 0, cm_size = 0;  // u2, u2, int (words)
  uint32_t cm_flags = 0, cm_flags_width = 0;       // u2 (JDK 17) or u4 (_flags._flags, 21+)
  uint64_t cm_has_line_table = 0;                  // the flag's bit
  int64_t cm_method = -1;                          // ConstMethod::_method where VMStructs has it
  uint32_t cm_sizeof = 0;                          // sizeof(ConstMethod): the bytecodes follow
  uint32_t cp_holder = 0, cp_length = 0, cp_sizeof = 0;  // ConstantPool
  // ConstantPool::_source_file_name_index, else InstanceKlass's (older JDKs).
  uint32_t source_file_index = 0;
  bool source_file_in_klass = false;
  uint32_t klass_name = 0, klass_constants = 0, klass_methods = 0;
  uint32_t array_length = 0, array_data = 0;       // Array<Method*>
  uint32_t symbol_length = 0, symbol_body = 0;     // Symbol: u2 length, bytes
  // UNSIGNED5's excluded byte count: 1 from JDK 20 (0 bytes are never
  // used), 0 before. VMStructs does not say; the JVM's own major version
  // number (Abstract_VM_Version::_vm_major_version) does.
  int unsigned5_x = 0;
};

// From an nmethod to the scopes (methods inlined into it) at one of its
// pcs (jvm_inlining.h reads them). A JVM whose tables lack one is still
// walked and named; its compiled frames are then not expanded.
struct InlineFields {
  bool usable = false;
  uint32_t pc_desc_size = 0, pc_desc_pc = 0, pc_desc_scope = 0;  // PcDesc (ints)
  uint32_t compile_id = 0;                                       // nmethod::_compile_id (int)
  // JDK 23+ keep PcDescs and scopes in immutable data, the metadata in
  // mutable data after the relocations; before, all in the nmethod.
  bool immutable = false;
  uint32_t immutable_data = 0, immutable_size = 0;  // nmethod (address, int)
  uint32_t mutable_data = 0, mutable_size = 0, relocation_size = 0;  // CodeBlob (address, int, int)
  uint32_t scopes_pcs = 0, scopes_data = 0;         // nmethod's offsets (int)
  // Before JDK 23: offsets from the nmethod, and a pointer to the scopes.
  uint32_t metadata = 0, dependencies = 0, scopes_data_begin = 0;
};

struct JvmLayout {
  ehp_jvm_proc proc{};  // offsets and interpreter slots; heaps empty
  CodeHeapFields heaps;
  MethodFields method;
  InlineFields inlining;
  std::string version;  // Abstract_VM_Version::_s_vm_release; empty: unreadable
};

// An error names what the JVM's tables lack ("no ConstMethod::_code_size")
// or hold that ehprof cannot use.
absl::StatusOr<JvmLayout> ReadJvmLayout(const VmStructs& vm, const ProcessMemory& mem);

// Abstract_VM_Version::_s_vm_release ("17.0.15+6-Debian-1deb12u1"); empty
// when the JVM's tables do not say or it does not read.
std::string JvmVersion(const VmStructs& vm, const ProcessMemory& mem);

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_JVM_LAYOUT_H_
