#include "agent/v8/v8_code.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "absl/strings/str_cat.h"

namespace ehprof {

namespace {

// Instructions start at least this aligned (V8's kCodeAlignment is 32 or
// 64): candidates for the InstructionStream's map word lie this far apart.
constexpr uint64_t kStep = 32;
constexpr uint64_t kPage = 4096;
// How far back from a pc its code may start (a code page's size; larger
// code, in V8's large-object space, goes unexpanded).
constexpr uint64_t kMaxScan = uint64_t{256} << 10;
// Words looked at as possible maps before InstructionStream's is known.
constexpr int kMaxTypeReads = 512;
// Bounds on what a Code and its tables may claim.
constexpr int32_t kMaxInstructionBytes = 256 << 20;
constexpr int64_t kMaxInlined = 4096;
constexpr size_t kMaxTableBytes = size_t{1} << 20;

}  // namespace

bool V8CodeReader::IsIstreamMap(uint64_t word) const {
  uint16_t type = 0;
  return (word & l_.proc.heap_object_tag_mask) == l_.proc.heap_object_tag &&
         mem_.Read(word - l_.proc.heap_object_tag + l_.proc.off_instance_type, &type, sizeof(type)) &&
         type == l_.code.type_instruction_stream;
}

absl::StatusOr<V8Code> V8CodeReader::Find(uint64_t pc, uint64_t* istream_map) const {
  if (!l_.code.readable) return absl::FailedPreconditionError("the code layout is not known");
  const uint64_t header = l_.code.istream_header;
  uint64_t page_at = 0;
  std::vector<uint8_t> page(kPage);
  int type_reads = 0;
  for (uint64_t start = pc & ~(kStep - 1); start >= header + kPage && pc - start < kMaxScan; start -= kStep) {
    const uint64_t at = start - header;  // the candidate's map word
    if ((at & ~(kPage - 1)) != page_at) {
      page_at = at & ~(kPage - 1);
      if (!mem_.Read(page_at, page.data(), kPage)) break;
    }
    uint64_t word = 0;
    std::memcpy(&word, page.data() + (at - page_at), sizeof(word));
    const bool candidate = *istream_map ? word == *istream_map : type_reads++ < kMaxTypeReads && IsIstreamMap(word);
    if (!candidate) continue;
    auto code = Read(at);
    if (!code.ok()) continue;
    *istream_map = word;
    if (pc - code->start < code->size) return code;
    return absl::NotFoundError("the pc lies past the instructions of the code before it");
  }
  return absl::NotFoundError("no code object holds the pc");
}

absl::StatusOr<V8Code> V8CodeReader::Read(uint64_t istream) const {
  const V8CodeFields& c = l_.code;
  const uint64_t tag = l_.proc.heap_object_tag, tagged = istream + tag;
  if (heap_.TypeOf(tagged) != c.type_instruction_stream) return absl::NotFoundError("not an InstructionStream");
  auto code = heap_.Field(tagged, c.istream_code);
  if (!code || heap_.TypeOf(*code) != c.type_code) return absl::NotFoundError("its Code is not one");
  auto back = heap_.Field(*code, c.code_istream);
  auto start = heap_.Field(*code, c.code_instruction_start);
  uint32_t flags = 0;
  int32_t size = 0;
  if (!back || *back != tagged || !start || *start != istream + c.istream_header ||
      !mem_.Read(*code - tag + c.code_flags, &flags, sizeof(flags)) ||
      !mem_.Read(*code - tag + c.code_instruction_size, &size, sizeof(size)) || size <= 0 ||
      size > kMaxInstructionBytes) {
    return absl::NotFoundError("Code and InstructionStream do not match");
  }
  V8Code out;
  out.istream = istream;
  out.code = *code - tag;
  out.start = *start;
  out.size = static_cast<uint32_t>(size);
  out.kind = (flags & c.kind_mask) >> c.kind_shift;
  // CodeKind: ..., INTERPRETED_FUNCTION, BASELINE, MAGLEV, TURBOFAN.
  out.optimized = out.kind > c.kind_baseline && out.kind <= c.kind_baseline + 2;
  if (out.optimized) {
    if (absl::Status st = ReadOptimized(*code, &out); !st.ok()) return st;
  }
  return out;
}

bool V8CodeReader::Same(const V8Code& code, uint64_t istream_map) const {
  const V8CodeFields& c = l_.code;
  const uint64_t tag = l_.proc.heap_object_tag;
  // Two reads: the InstructionStream's first words, the Code's fields
  // from its deoptimization data to its instruction start.
  const uint32_t offs[] = {c.code_deopt_data, c.code_positions, c.code_istream, c.code_instruction_start};
  const uint32_t lo = *std::min_element(std::begin(offs), std::end(offs));
  const uint32_t hi = *std::max_element(std::begin(offs), std::end(offs)) + 8;
  uint64_t is[4] = {}, f[8] = {};
  const uint32_t is_end = std::max<uint32_t>(l_.proc.off_map, c.istream_code) + 8;
  if (is_end > sizeof(is) || hi - lo > sizeof(f) || !mem_.Read(code.istream, is, is_end) ||
      !mem_.Read(code.code + lo, f, hi - lo)) {
    return false;
  }
  auto word = [](const uint64_t* w, uint32_t off) {
    uint64_t v = 0;
    std::memcpy(&v, reinterpret_cast<const uint8_t*>(w) + off, sizeof(v));
    return v;
  };
  const uint64_t map = word(is, l_.proc.off_map);
  return word(is, c.istream_code) == code.code + tag && (istream_map ? map == istream_map : IsIstreamMap(map)) &&
         word(f, c.code_istream - lo) == code.istream + tag && word(f, c.code_instruction_start - lo) == code.start &&
         (!code.optimized ||
          (word(f, c.code_deopt_data - lo) == code.deopt_data && word(f, c.code_positions - lo) == code.position_table));
}

absl::StatusOr<std::vector<uint8_t>> V8CodeReader::ByteArray(uint64_t tagged, size_t max) const {
  if (heap_.TypeOf(tagged) != l_.code.type_byte_array) return absl::FailedPreconditionError("not a ByteArray");
  auto raw = heap_.Field(tagged, l_.fixed_array_length);
  std::optional<int64_t> n = raw ? heap_.Smi(*raw) : std::nullopt;
  if (!n || *n < 0 || static_cast<uint64_t>(*n) > max) return absl::FailedPreconditionError("ByteArray length");
  std::vector<uint8_t> out(static_cast<size_t>(*n));
  if (!mem_.Read(tagged - l_.proc.heap_object_tag + l_.fixed_array_data, out.data(), out.size())) {
    return absl::UnavailableError("ByteArray unreadable");
  }
  return out;
}

absl::Status V8CodeReader::ReadOptimized(uint64_t code_tagged, V8Code* out) const {
  const V8CodeFields& c = l_.code;
  auto data = heap_.Field(code_tagged, c.code_deopt_data);
  auto length_raw = data ? heap_.Field(*data, l_.fixed_array_length) : std::nullopt;
  std::optional<int64_t> length = length_raw ? heap_.Smi(*length_raw) : std::nullopt;
  const uint32_t last = std::max({c.deopt_inlined_count, c.deopt_literals, c.deopt_sfi, c.deopt_inlining_positions});
  if (!data || heap_.TypeOf(*data) != l_.type_fixed_array || !length || *length <= last) {
    return absl::FailedPreconditionError("no DeoptimizationData");
  }
  std::vector<uint64_t> e(last + 1);
  if (!mem_.Read(*data - l_.proc.heap_object_tag + l_.fixed_array_data, e.data(), e.size() * 8)) {
    return absl::UnavailableError("DeoptimizationData unreadable");
  }
  std::optional<int64_t> count = heap_.Smi(e[c.deopt_inlined_count]);
  auto lits_raw = heap_.Field(e[c.deopt_literals], l_.fixed_array_length);
  std::optional<int64_t> lits = lits_raw ? heap_.Smi(*lits_raw) : std::nullopt;
  if (!count || *count < 0 || *count > kMaxInlined || !lits || *lits < *count ||
      heap_.TypeOf(e[c.deopt_sfi]) != l_.proc.type_shared_info) {
    return absl::FailedPreconditionError("DeoptimizationData out of bounds");
  }
  out->sfi = e[c.deopt_sfi] - l_.proc.heap_object_tag;
  out->deopt_data = *data;
  std::vector<uint64_t> sfis(static_cast<size_t>(*count));
  if (!mem_.Read(e[c.deopt_literals] - l_.proc.heap_object_tag + l_.fixed_array_data, sfis.data(), sfis.size() * 8)) {
    return absl::UnavailableError("inlined functions unreadable");
  }
  auto bytes = ByteArray(e[c.deopt_inlining_positions], static_cast<size_t>(kMaxInlined) * kV8InliningPositionBytes);
  if (!bytes.ok()) return bytes.status();
  auto inlining = DecodeV8InliningPositions(*bytes);
  if (!inlining.ok()) return inlining.status();
  for (const V8InliningPosition& p : *inlining) {
    if (p.function < 0 || p.function >= *count) return absl::FailedPreconditionError("inlined function out of bounds");
    // The literal array holds its objects weakly (a weak pointer has bit 1 set).
    const uint64_t sfi = sfis[static_cast<size_t>(p.function)] & ~uint64_t{2};
    if (heap_.TypeOf(sfi) != l_.proc.type_shared_info) return absl::FailedPreconditionError("inlined function unreadable");
    out->inlined.push_back({sfi - l_.proc.heap_object_tag, p.call});
  }
  auto table = heap_.Field(code_tagged, c.code_positions);
  if (!table) return absl::UnavailableError("source positions unreadable");
  out->position_table = *table;
  auto table_bytes = ByteArray(*table, kMaxTableBytes);
  if (!table_bytes.ok()) return table_bytes.status();
  auto positions = DecodeV8PositionTable(*table_bytes);
  if (!positions.ok()) return positions.status();
  out->positions = *std::move(positions);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<V8PositionEntry>> V8CodeReader::BytecodePositions(uint64_t sfi) const {
  const V8CodeFields& c = l_.code;
  if (!c.readable) return absl::FailedPreconditionError("the code layout is not known");
  auto data = heap_.Field(sfi + l_.proc.heap_object_tag, c.sfi_function_data);
  // Baseline code keeps the BytecodeArray in its deoptimization data field.
  if (data && heap_.TypeOf(*data) == c.type_code) data = heap_.Field(*data, c.code_deopt_data);
  if (!data || heap_.TypeOf(*data) != l_.proc.type_bytecode_array) return absl::NotFoundError("no BytecodeArray");
  auto table = heap_.Field(*data, c.bytecode_positions);
  if (!table) return absl::UnavailableError("BytecodeArray unreadable");
  // undefined until V8 collects them (lazy source positions).
  if (heap_.TypeOf(*table) != c.type_byte_array) return std::vector<V8PositionEntry>{};
  auto bytes = ByteArray(*table, kMaxTableBytes);
  if (!bytes.ok()) return bytes.status();
  return DecodeV8PositionTable(*bytes);
}

absl::StatusOr<std::vector<V8Scope>> V8ScopesAt(const V8Code& code, int32_t code_offset) {
  std::vector<V8Scope> out;
  const V8PositionEntry* e = V8PositionAt(code.positions, code_offset);
  V8SourcePosition pos = e ? e->position : V8SourcePosition{};
  while (out.size() < kMaxV8Scopes) {
    if (pos.inlining_id < 0) {
      out.push_back({code.sfi, pos.script_offset});
      return out;
    }
    if (static_cast<size_t>(pos.inlining_id) >= code.inlined.size()) {
      return absl::FailedPreconditionError(absl::StrCat("inlining id ", pos.inlining_id, " out of bounds"));
    }
    const V8InlinedFunction& f = code.inlined[static_cast<size_t>(pos.inlining_id)];
    out.push_back({f.sfi, pos.script_offset});
    pos = f.call;
  }
  return absl::FailedPreconditionError("inlining deeper than any V8 inlines");
}

}  // namespace ehprof
