#include "agent/v8/v8_layout.h"

#include <optional>
#include <string>

#include "absl/strings/str_cat.h"

namespace ehprof {

namespace {

// Bounds on what the metadata may say: frame slots lie within a few words of
// the frame pointer, fields within a small object's first bytes, instance
// types in a u16.
constexpr int32_t kMaxSlot = 256;
constexpr int32_t kMaxField = 1024;
constexpr int32_t kMaxType = 0xffff;

// Reads v8dbg values; the first missing or out-of-bounds one is the error.
class MetadataReader {
 public:
  MetadataReader(const ProcessMemory& mem, const V8Binary& b, uint64_t bias) : mem_(mem), b_(b), bias_(bias) {}

  // The value of v8dbg_<name>, which must lie in [lo, hi]; lo on an error.
  int32_t Get(const std::string& name, int32_t lo, int32_t hi) {
    std::optional<int32_t> v = Find(name);
    if (!v) {
      Fail(absl::StrCat("has no v8dbg_", name));
      return lo;
    }
    if (*v < lo || *v > hi) {
      Fail(absl::StrCat("v8dbg_", name, " is ", *v, ", not in [", lo, ", ", hi, "]"));
      return lo;
    }
    return *v;
  }
  uint16_t Field(const std::string& name) { return static_cast<uint16_t>(Get(name, 0, kMaxField)); }
  uint16_t Type(const std::string& name) { return static_cast<uint16_t>(Get(name, 1, kMaxType)); }
  int16_t Slot(const std::string& name) { return static_cast<int16_t>(Get(name, -kMaxSlot, kMaxSlot)); }
  // An optional value: `otherwise` when the binary has none.
  int32_t Maybe(const std::string& name, int32_t lo, int32_t hi, int32_t otherwise) {
    return Find(name) ? Get(name, lo, hi) : otherwise;
  }
  const absl::Status& status() const { return status_; }

 private:
  std::optional<int32_t> Find(const std::string& name) {
    auto it = b_.metadata.find(name);
    int32_t v = 0;
    if (it == b_.metadata.end()) return std::nullopt;
    if (!mem_.Read(it->second + bias_, &v, sizeof(v))) {
      Fail(absl::StrCat("v8dbg_", name, " unreadable in process ", mem_.pid()));
      return std::nullopt;
    }
    return v;
  }
  void Fail(std::string why) {
    if (status_.ok()) status_ = absl::FailedPreconditionError(absl::StrCat(b_.path, ": ", why));
  }

  const ProcessMemory& mem_;
  const V8Binary& b_;
  uint64_t bias_;
  absl::Status status_;
};

void ReadFrameLayout(MetadataReader& r, ehp_v8_proc* p) {
  p->off_fp_marker = r.Slot("off_fp_context_or_frame_type");
  p->off_fp_function = r.Slot("off_fp_function");
  p->off_fp_bytecode_array = r.Slot("off_fp_bytecode_array");
  p->off_fp_bytecode_offset = r.Slot("off_fp_bytecode_offset");
  p->off_map = r.Field("class_HeapObject__map__Map");
  p->off_instance_type = r.Field("class_Map__instance_type__uint16_t");
  p->off_function_shared = r.Field("class_JSFunction__shared__SharedFunctionInfo");
  p->type_shared_info = r.Type("type_SharedFunctionInfo__SHARED_FUNCTION_INFO_TYPE");
  p->type_bytecode_array = r.Type("type_BytecodeArray__BYTECODE_ARRAY_TYPE");
  p->heap_object_tag = static_cast<uint8_t>(r.Get("HeapObjectTag", 1, 1));
  p->heap_object_tag_mask = static_cast<uint8_t>(r.Get("HeapObjectTagMask", 1, 7));
  // A Smi's value sits above its tag bit and the shift (31 with 64-bit
  // Smis, 0 with 31-bit ones).
  const int32_t shift = r.Get("SmiShiftSize", 0, 31);
  p->smi_shift = static_cast<uint8_t>(shift + 1);
}

void ReadStringLayout(MetadataReader& r, V8Layout* l) {
  l->string_length = r.Field("class_String__length__int32_t");
  l->seq_one_byte_chars = r.Field("class_SeqOneByteString__chars__char");
  l->seq_two_byte_chars = r.Field("class_SeqTwoByteString__chars__char");
  l->cons_first = r.Field("class_ConsString__first__String");
  l->cons_second = r.Field("class_ConsString__second__String");
  l->thin_actual = r.Field("class_ThinString__actual__String");
  l->sliced_parent = static_cast<uint32_t>(r.Maybe("class_SlicedString__parent__String", 0, kMaxField, 0));
  l->sliced_offset = static_cast<uint32_t>(r.Maybe("class_SlicedString__offset__SMI", 0, kMaxField, 0));
  l->is_not_string_mask = static_cast<uint32_t>(r.Get("IsNotStringMask", -kMaxType, kMaxType)) & 0xffff;
  l->representation_mask = static_cast<uint32_t>(r.Get("StringRepresentationMask", 1, 0xff));
  l->encoding_mask = static_cast<uint32_t>(r.Get("StringEncodingMask", 1, 0xff));
  l->one_byte_tag = static_cast<uint32_t>(r.Get("OneByteStringTag", 0, 0xff));
  l->seq_tag = static_cast<uint32_t>(r.Maybe("SeqStringTag", 0, 0xff, 0));
  l->cons_tag = static_cast<uint32_t>(r.Get("ConsStringTag", 0, 0xff));
  l->thin_tag = static_cast<uint32_t>(r.Get("ThinStringTag", 0, 0xff));
  l->sliced_tag = static_cast<uint32_t>(r.Get("SlicedStringTag", 0, 0xff));
}

// The code fields (V8CodeFields' comment says which are derived); a
// binary without them (V8 before the InstructionStream split) leaves
// `readable` false.
void ReadCodeFields(MetadataReader& r, const V8Layout& l, V8CodeFields* c) {
  const uint32_t word = static_cast<uint32_t>(r.Get("TaggedSize", 8, 8));
  c->type_code = r.Type("type_Code__CODE_TYPE");
  c->type_instruction_stream = r.Type("type_InstructionStream__INSTRUCTION_STREAM_TYPE");
  c->type_byte_array = r.Type("type_ByteArray__BYTE_ARRAY_TYPE");
  c->istream_code = l.proc.off_map + word;
  c->istream_header = r.Field("class_InstructionStream__instruction_start__uintptr_t");
  c->code_deopt_data = r.Field("class_Code__deoptimization_data__FixedArray");
  c->code_positions = r.Field("class_Code__source_position_table__ByteArray");
  c->code_istream = c->code_positions + word;
  c->code_instruction_start = c->code_istream + word;
  c->code_flags = c->code_instruction_start + 8;
  c->code_instruction_size = c->code_flags + 8;  // after flags (int32), builtin id and kind flags (int16s)
  c->kind_mask = static_cast<uint32_t>(r.Get("CodeKindFieldMask", 1, 0xffff));
  c->kind_shift = static_cast<uint32_t>(r.Get("CodeKindFieldShift", 0, 31));
  c->kind_baseline = static_cast<uint32_t>(r.Get("CodeKindBaseline", 0, 0xffff));
  c->deopt_inlined_count = static_cast<uint32_t>(r.Get("DeoptimizationDataInlinedFunctionCountIndex", 0, 64));
  c->deopt_literals = static_cast<uint32_t>(r.Get("DeoptimizationDataLiteralArrayIndex", 0, 64));
  c->deopt_sfi = static_cast<uint32_t>(r.Get("DeoptimizationDataSharedFunctionInfoIndex", 0, 64));
  c->deopt_inlining_positions = static_cast<uint32_t>(r.Get("DeoptimizationDataInliningPositionsIndex", 0, 64));
  c->sfi_function_data = r.Field("class_SharedFunctionInfo__function_data__Object");
  c->bytecode_positions = l.fixed_array_data + 2 * word;  // after constant_pool and handler_table
  c->readable = r.status().ok();
}

}  // namespace

absl::StatusOr<V8Layout> ReadV8Layout(const ProcessMemory& mem, const V8Binary& binary, uint64_t bias) {
  MetadataReader r(mem, binary, bias);
  V8Layout l;
  ReadFrameLayout(r, &l.proc);
  ReadStringLayout(r, &l);
  l.sfi_name_or_scope_info = r.Field("class_SharedFunctionInfo__name_or_scope_info__Object");
  l.sfi_script_or_debug_info = r.Field("class_SharedFunctionInfo__script_or_debug_info__HeapObject");
  l.script_name = r.Field("class_Script__name__Object");
  l.script_source = r.Field("class_Script__source__Object");
  l.script_line_ends = r.Field("class_Script__line_ends__Object");
  l.fixed_array_length = r.Field("class_FixedArrayBase__length__SMI");
  l.fixed_array_data = r.Field("class_FixedArray__data__uintptr_t");
  l.type_script = r.Type("type_Script__SCRIPT_TYPE");
  l.type_scope_info = r.Type("type_ScopeInfo__SCOPE_INFO_TYPE");
  l.type_fixed_array = r.Type("type_FixedArray__FIXED_ARRAY_TYPE");
  l.bytecode_header = r.Field("class_BytecodeArray__data__uintptr_t");
  if (!r.status().ok()) return r.status();
  MetadataReader code(mem, binary, bias);
  ReadCodeFields(code, l, &l.code);
  if (!code.status().ok()) l.code_problem = std::string(code.status().message());
  return l;
}

}  // namespace ehprof
