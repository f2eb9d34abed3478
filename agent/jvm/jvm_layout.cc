#include "agent/jvm/jvm_layout.h"

#include <initializer_list>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace ehprof {

namespace {

// Collects what the layout needs of the tables; the first thing missing
// or unusable is the error.
class Need {
 public:
  explicit Need(const VmStructs& vm) : vm_(vm) {}

  // type::field's offset; `types`, when given, are the type strings the
  // reading of it expects. Offsets fit the ABI's u16.
  uint32_t Offset(absl::string_view type, absl::string_view field, std::initializer_list<absl::string_view> types = {}) {
    const VmField* f = Find(type, field, types);
    if (!f) return 0;
    if (f->is_static || f->offset > 0xffff) {
      Miss(absl::StrCat(type, "::", field, " is not an instance field ehprof can use"));
      return 0;
    }
    return static_cast<uint32_t>(f->offset);
  }
  uint64_t Static(absl::string_view type, absl::string_view field, std::initializer_list<absl::string_view> types = {}) {
    const VmField* f = Find(type, field, types);
    if (f && (!f->is_static || !f->address)) Miss(absl::StrCat(type, "::", field, " has no static address"));
    return f ? f->address : 0;
  }
  uint32_t Size(absl::string_view type) {
    auto s = vm_.Size(type);
    if (!s || *s == 0 || *s > 0xffff) {
      Miss(absl::StrCat("no size of ", type));
      return 0;
    }
    return static_cast<uint32_t>(*s);
  }
  int64_t Constant(absl::string_view name) {
    auto c = vm_.Constant(name);
    if (!c) Miss(absl::StrCat("no constant ", name));
    return c.value_or(0);
  }
  void Miss(std::string what) {
    if (missing_.empty()) missing_ = std::move(what);
  }
  absl::Status status() const {
    return missing_.empty() ? absl::OkStatus() : absl::FailedPreconditionError(missing_);
  }

 private:
  const VmField* Find(absl::string_view type, absl::string_view field, std::initializer_list<absl::string_view> types) {
    const VmField* f = vm_.Field(type, field);
    if (!f) {
      Miss(absl::StrCat("no ", type, "::", field));
      return nullptr;
    }
    if (types.size() == 0) return f;
    for (absl::string_view t : types) {
      if (f->type == t) return f;
    }
    Miss(absl::StrCat(type, "::", field, " is a ", f->type, ", not ", absl::StrJoin(types, " or ")));
    return nullptr;
  }

  const VmStructs& vm_;
  std::string missing_;
};

void CodeBlobOffsets(const VmStructs& vm, Need& need, ehp_jvm_proc* p) {
  p->heap_block = need.Size("HeapBlock");
  p->blob_name = need.Offset("CodeBlob", "_name", {"const char*"});
  p->blob_frame_size = need.Offset("CodeBlob", "_frame_size", {"int"});
  p->blob_frame_complete = need.Offset("CodeBlob", "_frame_complete_offset", {"int", "int16_t"});
  const VmField* complete = vm.Field("CodeBlob", "_frame_complete_offset");
  p->blob_frame_complete_i16 = complete && complete->type == "int16_t";
  // JDK 9-22 keep a pointer to the code, 23+ its offset from the blob.
  if (vm.Field("CodeBlob", "_code_begin")) {
    p->blob_code_begin = need.Offset("CodeBlob", "_code_begin", {"address"});
    p->code_begin_is_offset = 0;
  } else {
    p->blob_code_begin = need.Offset("CodeBlob", "_code_offset", {"int"});
    p->code_begin_is_offset = 1;
  }
  p->nmethod_method = need.Offset("nmethod", "_method", {"Method*"});
  p->method_const = need.Offset("Method", "_constMethod", {"ConstMethod*"});
  p->const_method_size = need.Size("ConstMethod");
}

// frame_x86.hpp numbers an interpreted frame's slots in words from its fp:
// sender_sp -1, last_sp -2, method -3, ..., bcp -8. VMStructs exports the
// first two; the rest keep their places relative to last_sp.
void InterpreterSlots(Need& need, ehp_jvm_proc* p) {
  const int64_t sender_sp = need.Constant("frame::interpreter_frame_sender_sp_offset");
  const int64_t last_sp = need.Constant("frame::interpreter_frame_last_sp_offset");
  if (!need.status().ok()) return;
  if (sender_sp != -1 || last_sp != sender_sp - 1) {
    need.Miss(absl::StrCat("an interpreter frame laid out as no x86-64 HotSpot's (sender_sp ", sender_sp,
                           ", last_sp ", last_sp, ")"));
    return;
  }
  p->interp_sender_sp = static_cast<ehp_u8>(-sender_sp * 8);
  p->interp_method = static_cast<ehp_u8>(-(last_sp - 1) * 8);
  p->interp_bcp = static_cast<ehp_u8>(-(last_sp - 6) * 8);
}

void HeapFields(const VmStructs& vm, Need& need, CodeHeapFields* h) {
  h->heaps_addr = need.Static("CodeCache", "_heaps", {"GrowableArray<CodeHeap*>*"});
  const char* base = vm.Field("GrowableArrayBase", "_len") ? "GrowableArrayBase" : "GenericGrowableArray";
  h->array_len = need.Offset(base, "_len", {"int"});
  h->array_data = need.Offset("GrowableArray<int>", "_data");
  h->heap_memory = need.Offset("CodeHeap", "_memory", {"VirtualSpace"});
  h->heap_segmap = need.Offset("CodeHeap", "_segmap", {"VirtualSpace"});
  h->heap_log2_segment = need.Offset("CodeHeap", "_log2_segment_size", {"int"});
  h->space_low_boundary = need.Offset("VirtualSpace", "_low_boundary", {"char*"});
  h->space_high_boundary = need.Offset("VirtualSpace", "_high_boundary", {"char*"});
}

void ConstMethodFields(const VmStructs& vm, Need& need, MethodFields* m) {
  m->method_const = need.Offset("Method", "_constMethod", {"ConstMethod*"});
  m->cm_constants = need.Offset("ConstMethod", "_constants", {"ConstantPool*"});
  m->cm_code_size = need.Offset("ConstMethod", "_code_size", {"u2"});
  m->cm_name_index = need.Offset("ConstMethod", "_name_index", {"u2"});
  m->cm_signature_index = need.Offset("ConstMethod", "_signature_index", {"u2"});
  m->cm_size = need.Offset("ConstMethod", "_constMethod_size", {"int"});
  m->cm_sizeof = need.Size("ConstMethod");
  // JDK 21 moved the flags into a ConstMethodFlags of 32 bits.
  if (vm.Field("ConstMethod", "_flags._flags")) {
    m->cm_flags = need.Offset("ConstMethod", "_flags._flags", {"u4"});
    m->cm_flags_width = 4;
    m->cm_has_line_table = need.Constant("ConstMethodFlags::_misc_has_linenumber_table");
  } else {
    m->cm_flags = need.Offset("ConstMethod", "_flags", {"u2"});
    m->cm_flags_width = 2;
    m->cm_has_line_table = need.Constant("ConstMethod::_has_linenumber_table");
  }
  if (const VmField* back = vm.Field("ConstMethod", "_method"); back && !back->is_static) {
    m->cm_method = static_cast<int64_t>(back->offset);
  }
}

void NamingFields(const VmStructs& vm, Need& need, MethodFields* m) {
  ConstMethodFields(vm, need, m);
  m->cp_holder = need.Offset("ConstantPool", "_pool_holder", {"InstanceKlass*"});
  m->cp_length = need.Offset("ConstantPool", "_length", {"int"});
  m->cp_sizeof = need.Size("ConstantPool");
  m->source_file_in_klass = !vm.Field("ConstantPool", "_source_file_name_index");
  m->source_file_index = need.Offset(m->source_file_in_klass ? "InstanceKlass" : "ConstantPool",
                                     "_source_file_name_index", {"u2"});
  m->klass_name = need.Offset("InstanceKlass", "_name", {"Symbol*"});
  m->klass_constants = need.Offset("InstanceKlass", "_constants", {"ConstantPool*"});
  m->klass_methods = need.Offset("InstanceKlass", "_methods", {"Array<Method*>*"});
  m->array_length = need.Offset("Array<int>", "_length", {"int"});
  m->array_data = need.Offset("Array<Method*>", "_data");
  m->symbol_length = need.Offset("Symbol", "_length", {"u2", "unsigned short"});
  m->symbol_body = need.Offset("Symbol", "_body");
}

// Fields only the expansion of inlined methods needs: their lack leaves
// compiled frames as they are, it does not refuse the JVM.
InlineFields InliningFields(const VmStructs& vm) {
  Need need(vm);
  InlineFields f;
  f.pc_desc_size = need.Size("PcDesc");
  f.pc_desc_pc = need.Offset("PcDesc", "_pc_offset", {"int"});
  f.pc_desc_scope = need.Offset("PcDesc", "_scope_decode_offset", {"int"});
  f.compile_id = need.Offset("nmethod", "_compile_id", {"int"});
  f.scopes_pcs = need.Offset("nmethod", "_scopes_pcs_offset", {"int"});
  f.immutable = vm.Field("nmethod", "_immutable_data") != nullptr;
  if (f.immutable) {
    f.immutable_data = need.Offset("nmethod", "_immutable_data", {"address"});
    f.immutable_size = need.Offset("nmethod", "_immutable_data_size", {"int"});
    f.scopes_data = need.Offset("nmethod", "_scopes_data_offset", {"int"});
    f.mutable_data = need.Offset("CodeBlob", "_mutable_data", {"address"});
    f.mutable_size = need.Offset("CodeBlob", "_mutable_data_size", {"int"});
    f.relocation_size = need.Offset("CodeBlob", "_relocation_size", {"int"});
  } else {
    f.metadata = need.Offset("nmethod", "_metadata_offset", {"int"});
    f.dependencies = need.Offset("nmethod", "_dependencies_offset", {"int"});
    f.scopes_data_begin = need.Offset("nmethod", "_scopes_data_begin", {"address"});
  }
  f.usable = need.status().ok() && f.pc_desc_pc + 4 <= f.pc_desc_size && f.pc_desc_scope + 4 <= f.pc_desc_size;
  return f;
}

}  // namespace

absl::StatusOr<JvmLayout> ReadJvmLayout(const VmStructs& vm, const ProcessMemory& mem) {
  JvmLayout out;
  Need need(vm);
  CodeBlobOffsets(vm, need, &out.proc);
  InterpreterSlots(need, &out.proc);
  HeapFields(vm, need, &out.heaps);
  NamingFields(vm, need, &out.method);
  out.inlining = InliningFields(vm);
  const uint64_t major_at = need.Static("Abstract_VM_Version", "_vm_major_version", {"int"});
  if (absl::Status st = need.status(); !st.ok()) return st;
  int32_t major = 0;
  if (!mem.Read(major_at, &major, sizeof(major))) {
    return absl::UnavailableError("Abstract_VM_Version::_vm_major_version unreadable");
  }
  if (major < 8 || major > 1000) return absl::InvalidArgumentError(absl::StrCat("JVM major version ", major));
  out.method.unsigned5_x = major >= 20 ? 1 : 0;
  out.version = JvmVersion(vm, mem);
  return out;
}

std::string JvmVersion(const VmStructs& vm, const ProcessMemory& mem) {
  uint64_t release = 0;
  const VmField* f = vm.Field("Abstract_VM_Version", "_s_vm_release");
  if (!f || !f->is_static || !mem.ReadU64(f->address, &release) || !release) return "";
  return ReadVmString(mem, release).value_or("");
}

}  // namespace ehprof
