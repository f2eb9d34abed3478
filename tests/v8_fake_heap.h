// Node 20's V8 heap objects built in this process's own memory for the
// agent/v8 tests: the layout (the v8dbg values of its binary, and the
// Code fields derived from them) and a heap of tagged objects to read
// back through process_vm_readv.
#ifndef EHPROF_TESTS_V8_FAKE_HEAP_H_
#define EHPROF_TESTS_V8_FAKE_HEAP_H_

#include <cstdint>
#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "agent/v8/v8_layout.h"

namespace ehprof::testing {

constexpr uint16_t kOneByteString = 8 | 0;  // one byte, sequential
constexpr uint16_t kTwoByteString = 0;
constexpr uint16_t kConsString = 8 | 1;
constexpr uint16_t kThinString = 8 | 5;
constexpr uint16_t kSfi = 262, kScript = 167, kScopeInfo = 261, kFixedArray = 175, kJsObject = 2058;
constexpr uint16_t kCode = 245, kInstructionStream = 252, kByteArray = 190, kWeakFixedArray = 240, kBytecodeArray = 191;

inline V8Layout Node20Layout() {
  V8Layout l;
  l.proc.off_map = 0;
  l.proc.off_instance_type = 12;
  l.proc.type_shared_info = kSfi;
  l.proc.heap_object_tag = 1;
  l.proc.heap_object_tag_mask = 3;
  l.proc.smi_shift = 32;
  l.sfi_name_or_scope_info = 16;
  l.sfi_script_or_debug_info = 32;
  l.script_name = 16;
  l.script_source = 8;
  l.script_line_ends = 56;
  l.fixed_array_length = 8;
  l.fixed_array_data = 16;
  l.type_script = kScript;
  l.type_scope_info = kScopeInfo;
  l.type_fixed_array = kFixedArray;
  l.string_length = 12;
  l.seq_one_byte_chars = l.seq_two_byte_chars = 16;
  l.cons_first = 16;
  l.cons_second = 24;
  l.thin_actual = 16;
  l.is_not_string_mask = 0xff80;
  l.representation_mask = 7;
  l.encoding_mask = 8;
  l.one_byte_tag = 8;
  l.seq_tag = 0;
  l.cons_tag = 1;
  l.thin_tag = 5;
  l.sliced_tag = 3;
  l.bytecode_header = 54;
  l.proc.type_bytecode_array = kBytecodeArray;
  // Code and InstructionStream as node 20 lays them (v8_layout.cc's
  // ReadCodeFields from its metadata).
  V8CodeFields& c = l.code;
  c.readable = true;
  c.type_code = kCode;
  c.type_instruction_stream = kInstructionStream;
  c.type_byte_array = kByteArray;
  c.istream_code = 8;
  c.istream_header = 16;
  c.code_deopt_data = 16;
  c.code_positions = 24;
  c.code_istream = 32;
  c.code_instruction_start = 40;
  c.code_flags = 48;
  c.code_instruction_size = 56;
  c.kind_mask = 15;
  c.kind_shift = 0;
  c.kind_baseline = 11;
  c.deopt_inlined_count = 1;
  c.deopt_literals = 2;
  c.deopt_sfi = 6;
  c.deopt_inlining_positions = 7;
  c.sfi_function_data = 8;
  c.bytecode_positions = 32;
  return l;
}

// Heap objects in this process: each a zeroed run of words; pointers to
// them are tagged as V8's are.
class FakeHeap {
 public:
  // A map of instance type `type` (tagged).
  uint64_t Map(uint16_t type) {
    std::vector<uint64_t>& map = objects_.emplace_back(4, 0);
    std::memcpy(reinterpret_cast<char*>(map.data()) + 12, &type, sizeof(type));
    return Tag(map.data());
  }
  uint64_t Object(size_t words, uint16_t type) {
    std::vector<uint64_t>& o = objects_.emplace_back(words, 0);
    o[0] = Map(type);
    return Tag(o.data());
  }
  static uint64_t Tag(const void* p) { return reinterpret_cast<uint64_t>(p) + 1; }
  static uint64_t Smi(int64_t v) { return static_cast<uint64_t>(v) << 32; }
  static char* Bytes(uint64_t tagged) { return reinterpret_cast<char*>(tagged - 1); }
  static void Set(uint64_t tagged, uint32_t offset, uint64_t v) { std::memcpy(Bytes(tagged) + offset, &v, 8); }
  uint64_t String(const std::string& s) {
    const uint64_t o = Object(2 + (s.size() + 7) / 8, kOneByteString);
    SetLength(o, static_cast<int32_t>(s.size()));
    std::memcpy(Bytes(o) + 16, s.data(), s.size());
    return o;
  }
  uint64_t TwoByte(const std::u16string& s) {
    const uint64_t o = Object(2 + (s.size() * 2 + 7) / 8, kTwoByteString);
    SetLength(o, static_cast<int32_t>(s.size()));
    std::memcpy(Bytes(o) + 16, s.data(), s.size() * 2);
    return o;
  }
  static void SetLength(uint64_t o, int32_t n) { std::memcpy(Bytes(o) + 12, &n, 4); }
  // A ByteArray (or `type`) holding `bytes`.
  uint64_t ByteArray(const std::vector<uint8_t>& bytes, uint16_t type = kByteArray) {
    const uint64_t o = Object(2 + (bytes.size() + 7) / 8, type);
    Set(o, 8, Smi(static_cast<int64_t>(bytes.size())));
    if (!bytes.empty()) std::memcpy(Bytes(o) + 16, bytes.data(), bytes.size());
    return o;
  }
  // A FixedArray (or `type`) of `elements`.
  uint64_t Array(const std::vector<uint64_t>& elements, uint16_t type = kFixedArray) {
    const uint64_t o = Object(2 + elements.size(), type);
    Set(o, 8, Smi(static_cast<int64_t>(elements.size())));
    for (size_t i = 0; i < elements.size(); ++i) Set(o, static_cast<uint32_t>(16 + 8 * i), elements[i]);
    return o;
  }

 private:
  std::deque<std::vector<uint64_t>> objects_;
};

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_V8_FAKE_HEAP_H_
