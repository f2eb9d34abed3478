#include "agent/v8/v8_heap.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"

namespace ehprof {

namespace {

// A String's length is below 2^29 in every V8 (String::kMaxLength).
constexpr int32_t kMaxStringLength = 1 << 29;
// Lines of a script read at most (a longer one's later functions have no line).
constexpr int64_t kMaxLines = 1 << 20;
// A script's source read for its lines, at most (UTF-16 units).
constexpr size_t kMaxSourceUnits = size_t{4} << 20;
// Cons/thin/sliced links followed for one string, and the string objects
// read for it in all (V8 flattens a cons string long before this many).
constexpr int kMaxStringDepth = 16;
constexpr int kMaxStringPieces = 256;
// ScopeInfo: context locals kept inline below this count (V8's
// kScopeInfoMaxInlinedLocalNamesSize), and the most looked at at all.
constexpr int64_t kMaxInlinedLocals = 75;
constexpr int64_t kMaxLocals = 1 << 16;
// Slots after the locals that may hold the function's name (a saved class
// variable, then the function variable's name and index, then the inferred
// name) before its start and end positions.
constexpr int kNameSlots = 6;

}  // namespace

std::optional<int64_t> V8Heap::Smi(uint64_t raw) const {
  if (raw & 1) return std::nullopt;
  const uint8_t shift = l_.proc.smi_shift;
  if (shift == 32 && (raw & 0xffffffffu)) return std::nullopt;  // not a 64-bit Smi
  return static_cast<int64_t>(raw) >> shift;
}

std::optional<uint64_t> V8Heap::Field(uint64_t obj, uint32_t offset) const {
  uint64_t v = 0;
  if ((obj & l_.proc.heap_object_tag_mask) != l_.proc.heap_object_tag) return std::nullopt;
  if (!mem_.ReadU64(obj - l_.proc.heap_object_tag + offset, &v)) return std::nullopt;
  return v;
}

std::optional<uint16_t> V8Heap::TypeOf(uint64_t tagged) const {
  auto map = Field(tagged, l_.proc.off_map);
  uint16_t type = 0;
  if (!map || (*map & l_.proc.heap_object_tag_mask) != l_.proc.heap_object_tag ||
      !mem_.Read(*map - l_.proc.heap_object_tag + l_.proc.off_instance_type, &type, sizeof(type))) {
    return std::nullopt;
  }
  return type;
}

absl::Status V8Heap::AppendSeq(uint64_t tagged, uint16_t type, uint32_t from, uint32_t length, size_t limit,
                               std::vector<uint16_t>* out) const {
  const bool one_byte = (type & l_.encoding_mask) == l_.one_byte_tag;
  const size_t room = limit - std::min(out->size(), limit);
  const uint32_t n = from >= length ? 0 : static_cast<uint32_t>(std::min<size_t>(length - from, room));
  const uint64_t chars = tagged - l_.proc.heap_object_tag + (one_byte ? l_.seq_one_byte_chars : l_.seq_two_byte_chars);
  const size_t width = one_byte ? 1 : 2;
  std::vector<uint8_t> b(n * width);
  if (!mem_.Read(chars + uint64_t{from} * width, b.data(), b.size())) {
    return absl::UnavailableError("string characters unreadable");
  }
  for (uint32_t i = 0; i < n; ++i) {
    out->push_back(one_byte ? b[i] : static_cast<uint16_t>(b[2 * i] | (b[2 * i + 1] << 8)));
  }
  return absl::OkStatus();
}

absl::Status V8Heap::AppendString(uint64_t tagged, uint32_t from, int depth, size_t limit,
                                  std::vector<uint16_t>* out, int* pieces) const {
  if (depth > kMaxStringDepth) return absl::FailedPreconditionError("string nested too deep");
  if (--*pieces < 0) return absl::FailedPreconditionError(absl::StrCat("string of over ", kMaxStringPieces, " pieces"));
  if (out->size() >= limit) return absl::OkStatus();
  auto type = TypeOf(tagged);
  int32_t length = 0;
  if (!type || !IsString(*type)) return absl::FailedPreconditionError("not a string");
  if (!mem_.Read(tagged - l_.proc.heap_object_tag + l_.string_length, &length, sizeof(length)) || length < 0 ||
      length > kMaxStringLength) {
    return absl::FailedPreconditionError("string length unreadable or out of bounds");
  }
  const uint32_t repr = *type & l_.representation_mask;
  if (repr == l_.seq_tag) return AppendSeq(tagged, *type, from, static_cast<uint32_t>(length), limit, out);
  if (repr == l_.thin_tag) {
    auto actual = Field(tagged, l_.thin_actual);
    return actual ? AppendString(*actual, from, depth + 1, limit, out, pieces)
                  : absl::UnavailableError("thin string unreadable");
  }
  if (repr == l_.cons_tag && from == 0) {
    auto first = Field(tagged, l_.cons_first), second = Field(tagged, l_.cons_second);
    if (!first || !second) return absl::UnavailableError("cons string unreadable");
    if (absl::Status st = AppendString(*first, 0, depth + 1, limit, out, pieces); !st.ok()) return st;
    return AppendString(*second, 0, depth + 1, limit, out, pieces);
  }
  if (repr == l_.sliced_tag && l_.sliced_parent && l_.sliced_offset) {
    auto parent = Field(tagged, l_.sliced_parent), offset = Field(tagged, l_.sliced_offset);
    std::optional<int64_t> at = offset ? Smi(*offset) : std::nullopt;
    if (!parent || !at || *at < 0 || *at > kMaxStringLength) return absl::UnavailableError("sliced string unreadable");
    return AppendString(*parent, from + static_cast<uint32_t>(*at), depth + 1, limit, out, pieces);
  }
  return absl::FailedPreconditionError(absl::StrCat("a string of representation ", repr, " is not read"));
}

absl::StatusOr<std::string> V8Heap::ReadString(uint64_t tagged) const {
  std::vector<uint16_t> units;
  int pieces = kMaxStringPieces;
  if (absl::Status st = AppendString(tagged, 0, 0, kMaxV8NameBytes, &units, &pieces); !st.ok()) return st;
  std::string out;
  bool cut = units.size() >= kMaxV8NameBytes;  // read up to the limit: maybe longer
  for (size_t i = 0; i < units.size(); ++i) {
    uint32_t c = units[i];
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < units.size() && units[i + 1] >= 0xdc00 && units[i + 1] < 0xe000) {
      c = 0x10000 + ((c - 0xd800) << 10) + (units[++i] - 0xdc00);
    } else if (c >= 0xd800 && c < 0xe000) {
      c = 0xfffd;  // a lone surrogate
    }
    std::string utf8;
    AppendUtf8(c, &utf8);
    if (out.size() + utf8.size() > kMaxV8NameBytes) {
      cut = true;
      break;
    }
    out += utf8;
  }
  if (cut) out.append("...");
  return out;
}

void V8Heap::FromScopeInfo(uint64_t scope_info, V8Function* f) const {
  // Past the map: flags, parameter count and context local count (Smis),
  // then the locals' names (inline, or one hash table) and their infos.
  const uint32_t word = 8;
  auto locals_raw = Field(scope_info, 3 * word);
  std::optional<int64_t> locals = locals_raw ? Smi(*locals_raw) : std::nullopt;
  if (!locals || *locals < 0 || *locals > kMaxLocals) return;
  const int64_t names = *locals < kMaxInlinedLocals ? *locals : 1;
  uint32_t at = static_cast<uint32_t>(4 * word + (names + *locals) * word);
  for (int i = 0; i < kNameSlots && f->name.empty(); ++i, at += word) {
    auto v = Field(scope_info, at);
    if (!v) return;
    auto type = TypeOf(*v);
    if (!type || !IsString(*type)) continue;
    auto name = ReadString(*v);
    if (!name.ok()) return;
    f->name = *name;
  }
  if (f->name.empty()) return;
  // After the name: the function variable's slot index (a Smi) and an
  // inferred name (a String or undefined) when the name is the function
  // variable's, then the start and end positions (Smis); after those, the
  // outer ScopeInfo (an object) or the end.
  std::optional<int64_t> s[4];
  for (int i = 0; i < 4; ++i) {
    if (auto raw = Field(scope_info, at + i * word)) s[i] = Smi(*raw);
  }
  int pos = -1;
  if (s[0] && s[1] && s[2]) pos = 1;        // index, start, end
  else if (s[0] && s[1]) pos = 0;           // start, end after an inferred name
  else if (s[0] && s[2] && s[3]) pos = 2;   // index, inferred name, start, end
  if (pos >= 0 && *s[pos] >= 0 && *s[pos] <= *s[pos + 1] && *s[pos + 1] < kMaxStringLength) {
    f->start_position = static_cast<int32_t>(*s[pos]);
  }
}

absl::StatusOr<V8Function> V8Heap::ReadFunction(uint64_t sfi) const {
  const uint64_t tagged = sfi + l_.proc.heap_object_tag;
  auto type = TypeOf(tagged);
  if (!type || *type != l_.proc.type_shared_info) {
    return absl::FailedPreconditionError("not a SharedFunctionInfo");
  }
  V8Function f;
  auto nos = Field(tagged, l_.sfi_name_or_scope_info);
  auto script = Field(tagged, l_.sfi_script_or_debug_info);
  if (!nos || !script) return absl::UnavailableError("SharedFunctionInfo unreadable");
  auto nos_type = TypeOf(*nos);
  if (nos_type && IsString(*nos_type)) {
    auto name = ReadString(*nos);
    if (!name.ok()) return name.status();
    f.name = *name;
  } else if (nos_type && *nos_type == l_.type_scope_info) {
    FromScopeInfo(*nos, &f);
  }
  if (TypeOf(*script) == l_.type_script) {
    f.script_addr = *script - l_.proc.heap_object_tag;
    auto name = Field(*script, l_.script_name);
    auto name_type = name ? TypeOf(*name) : std::nullopt;
    if (name_type && IsString(*name_type)) {
      auto s = ReadString(*name);
      if (!s.ok()) return s.status();
      f.script = *s;
    }
  }
  return f;
}

absl::StatusOr<std::vector<int32_t>> V8Heap::SourceLineEnds(uint64_t script) const {
  auto source = Field(script, l_.script_source);
  if (!source) return absl::UnavailableError("Script unreadable");
  std::vector<uint16_t> units;
  int pieces = kMaxStringPieces;
  if (absl::Status st = AppendString(*source, 0, 0, kMaxSourceUnits, &units, &pieces); !st.ok()) return st;
  std::vector<int32_t> out;
  for (size_t i = 0; i < units.size(); ++i) {
    if (units[i] == '\n') out.push_back(static_cast<int32_t>(i));
  }
  // The last line ends where the source does (or where it was cut).
  out.push_back(static_cast<int32_t>(units.size()));
  return out;
}

absl::StatusOr<std::vector<int32_t>> V8Heap::ReadLineEnds(uint64_t script) const {
  const uint64_t tagged = script + l_.proc.heap_object_tag;
  auto ends = Field(tagged, l_.script_line_ends);
  if (!ends) return absl::UnavailableError("Script unreadable");
  if (TypeOf(*ends) != l_.type_fixed_array) return SourceLineEnds(tagged);
  auto length_raw = Field(*ends, l_.fixed_array_length);
  std::optional<int64_t> length = length_raw ? Smi(*length_raw) : std::nullopt;
  if (!length || *length < 0 || *length > kMaxLines) return absl::FailedPreconditionError("line ends of no sane length");
  std::vector<uint64_t> raw(static_cast<size_t>(*length));
  if (!mem_.Read(*ends - l_.proc.heap_object_tag + l_.fixed_array_data, raw.data(), raw.size() * 8)) {
    return absl::UnavailableError("line ends unreadable");
  }
  std::vector<int32_t> out;
  out.reserve(raw.size());
  for (uint64_t r : raw) {
    auto v = Smi(r);
    if (!v || *v < (out.empty() ? 0 : out.back()) || *v > kMaxStringLength) {
      return absl::FailedPreconditionError("line ends out of order");
    }
    out.push_back(static_cast<int32_t>(*v));
  }
  return out;
}

}  // namespace ehprof
