// The layout of one V8 process's heap and frames as ehprof reads them: the
// BPF side's ehp_v8_proc and the offsets naming needs, from the v8dbg_*
// values in the live process (V8Binary's addresses plus the mapping's
// bias). Every value is checked against a bound: metadata that does not
// make sense refuses the process rather than naming frames wrongly.
#ifndef EHPROF_AGENT_V8_V8_LAYOUT_H_
#define EHPROF_AGENT_V8_V8_LAYOUT_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "agent/process/process_memory.h"
#include "agent/v8/v8_binary.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

// What reading optimized code at a pc takes (agent/v8/v8_code.h): fields
// of Code, InstructionStream and DeoptimizationData. V8 11.x's Code holds
// its InstructionStream, instruction start, flags and instruction size in
// the words after its position table; the metadata names only the first
// fields, the rest follow from them (and each Code read checks that its
// InstructionStream and instruction start point at each other).
struct V8CodeFields {
  bool readable = false;  // false: compiled frames keep their own function alone
  uint16_t type_code = 0, type_instruction_stream = 0, type_byte_array = 0;
  uint32_t istream_code = 0;    // InstructionStream::code (the Code it belongs to)
  uint32_t istream_header = 0;  // its instructions start this far in
  uint32_t code_deopt_data = 0, code_positions = 0;
  uint32_t code_istream = 0, code_instruction_start = 0, code_flags = 0, code_instruction_size = 0;
  uint32_t kind_mask = 0, kind_shift = 0, kind_baseline = 0;
  // DeoptimizationData (a FixedArray) element indexes.
  uint32_t deopt_inlined_count = 0, deopt_literals = 0, deopt_sfi = 0, deopt_inlining_positions = 0;
  // SharedFunctionInfo::function_data (its BytecodeArray, or baseline
  // Code holding it) and BytecodeArray::source_position_table.
  uint32_t sfi_function_data = 0, bytecode_positions = 0;
};

struct V8Layout {
  ehp_v8_proc proc{};
  // SharedFunctionInfo, Script, ScopeInfo, FixedArray fields (bytes from
  // the untagged object).
  uint32_t sfi_name_or_scope_info = 0, sfi_script_or_debug_info = 0;
  uint32_t script_name = 0, script_source = 0, script_line_ends = 0;
  uint32_t fixed_array_length = 0, fixed_array_data = 0;
  uint16_t type_script = 0, type_scope_info = 0, type_fixed_array = 0;
  // Strings: String::length (int32), the chars of sequential strings, the
  // parts of cons, thin and sliced strings (sliced: 0 when unknown).
  uint32_t string_length = 0, seq_one_byte_chars = 0, seq_two_byte_chars = 0;
  uint32_t cons_first = 0, cons_second = 0, thin_actual = 0, sliced_parent = 0, sliced_offset = 0;
  // Instance type bits of strings.
  uint32_t is_not_string_mask = 0, representation_mask = 0, encoding_mask = 0;
  uint32_t one_byte_tag = 0, seq_tag = 0, cons_tag = 0, thin_tag = 0, sliced_tag = 0;
  // BytecodeArray's header: a frame's offset slot holds offset + this - tag.
  uint32_t bytecode_header = 0;
  V8CodeFields code;
  std::string code_problem;  // why code.readable is false
};

// Reads the layout of the V8 in pid whose binary is mapped with `bias`
// (runtime address of ELF address 0). The message names the binary and the
// missing or out-of-bounds value.
absl::StatusOr<V8Layout> ReadV8Layout(const ProcessMemory& mem, const V8Binary& binary, uint64_t bias);

}  // namespace ehprof

#endif  // EHPROF_AGENT_V8_V8_LAYOUT_H_
