#include "agent/ruby/ruby_objects.h"

#include <bit>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"

namespace ehprof {

namespace {

// ruby/internal/value_type.h and imemo.h: the type bits of RBasic's flags.
constexpr uint64_t kTypeMask = 0x1f;
constexpr uint64_t kTypeString = 0x05, kTypeArray = 0x07, kTypeImemo = 0x1a;
constexpr int kImemoSvar = 2, kImemoMethodEntry = 6, kImemoIseq = 7;
// RSTRING_NOEMBED and RARRAY_EMBED_FLAG: FL_USER1.
constexpr uint64_t kFlUser1 = 1u << 13;
// symbol.c: ID_ENTRY_UNIT IDs an Array of the table holds, two VALUEs each
// (the name, the symbol); IDs above tLAST_OP_ID carry their scope in their
// low RUBY_ID_SCOPE_SHIFT bits.
constexpr uint64_t kIdEntryUnit = 512, kLastOpId = 0xa9, kIdScopeShift = 4;
// method.h: VM_METHOD_TYPE_CFUNC; rb_method_definition_t's original_id.
constexpr uint32_t kMethodIseq = 0, kMethodCfunc = 1;
constexpr uint64_t kDefOriginalId = 32;
// The longest Array the walk indexes: the ID table's tops (a few hundred
// units) and its units (1024 VALUEs).
constexpr uint64_t kMaxArray = 1u << 20;
// iseq.c: succ_index_table's 54 positions in 6 words, then 512-position
// blocks {rank u32, small_block_ranks u64, bits[8]}.
constexpr uint32_t kImmediate = 54, kBlockBits = 512, kBlockBytes = 80;
// The line table's entry: {line_no, node_id, events}.
constexpr uint64_t kInsnInfoEntry = 12;
// The two places 3.1-3.4 keep rb_iseq_constant_body's insns_info.
constexpr uint32_t kInsnsInfoCandidates[] = {112, 120};

bool Canonical(uint64_t p) { return p >= 4096 && p < (1ull << 47) && (p & 7) == 0; }

}  // namespace

absl::StatusOr<uint64_t> RubyObjects::U64(uint64_t addr) const {
  uint64_t v = 0;
  if (!mem_.ReadU64(addr, &v)) return absl::UnavailableError(absl::StrFormat("unreadable at 0x%x", addr));
  return v;
}

absl::StatusOr<int> RubyObjects::ImemoType(uint64_t value) const {
  if (!Canonical(value)) return absl::InvalidArgumentError(absl::StrFormat("0x%x is no object", value));
  auto flags = U64(value);
  if (!flags.ok()) return flags.status();
  if ((*flags & kTypeMask) != kTypeImemo) return -1;
  return static_cast<int>((*flags >> 12) & 0xf);
}

absl::StatusOr<std::string> RubyObjects::String(uint64_t value) const {
  uint64_t h[4];
  if (!Canonical(value) || !mem_.Read(value, h, sizeof(h))) {
    return absl::UnavailableError(absl::StrFormat("string 0x%x unreadable", value));
  }
  if ((h[0] & kTypeMask) != kTypeString) return absl::InvalidArgumentError(absl::StrFormat("0x%x is no String", value));
  const bool embedded = !(h[0] & kFlUser1);
  uint64_t len, at;
  if (layout_.string_len_field) {
    len = h[2];
    at = embedded ? value + 24 : h[3];
  } else {
    len = embedded ? (h[0] >> 14) & 0x1f : h[2];
    at = embedded ? value + 16 : h[3];
  }
  len = std::min<uint64_t>(len, kRubyMaxString);
  std::string out(len, '\0');
  if (len && !mem_.Read(at, out.data(), len)) return absl::UnavailableError("string bytes unreadable");
  return out;
}

absl::StatusOr<uint64_t> RubyObjects::ArrayAt(uint64_t ary, uint64_t index) const {
  uint64_t h[5];
  if (!Canonical(ary) || !mem_.Read(ary, h, sizeof(h))) {
    return absl::UnavailableError(absl::StrFormat("array 0x%x unreadable", ary));
  }
  if ((h[0] & kTypeMask) != kTypeArray) return absl::InvalidArgumentError(absl::StrFormat("0x%x is no Array", ary));
  const bool embedded = h[0] & kFlUser1;
  // Embedded: 3.1 keeps the length in 2 flag bits, 3.2+ in 7.
  const uint64_t len = embedded ? (h[0] >> 15) & (layout_.string_len_field ? 0x7f : 0x3) : h[2];
  if (index >= len || len > kMaxArray) return absl::OutOfRangeError("array index out of range");
  return U64((embedded ? ary + 16 : h[4]) + index * 8);
}

absl::StatusOr<std::string> RubyObjects::IdName(uint64_t id) const {
  const uint64_t serial = id > kLastOpId ? id >> kIdScopeShift : id;
  uint32_t last_id = 0;
  if (!mem_.Read(layout_.symbols_last_id, &last_id, 4)) return absl::UnavailableError("global_symbols unreadable");
  if (serial == 0 || serial > last_id) return absl::OutOfRangeError(absl::StrFormat("ID 0x%x unknown", id));
  auto ids = U64(layout_.symbols_ids);
  if (!ids.ok()) return ids.status();
  auto unit = ArrayAt(*ids, serial / kIdEntryUnit);
  if (!unit.ok()) return unit.status();
  auto str = ArrayAt(*unit, (serial % kIdEntryUnit) * 2);
  if (!str.ok()) return str.status();
  return String(*str);
}

absl::Status RubyObjects::Probe() {
  for (bool len_field : {false, true}) {
    layout_.string_len_field = len_field;
    auto plus = IdName('+');
    auto minus = IdName('-');
    if (plus.ok() && *plus == "+" && minus.ok() && *minus == "-") return absl::OkStatus();
  }
  return absl::NotFoundError("the symbols \"+\" and \"-\" read as neither string layout");
}

bool RubyObjects::InsnsInfoAt(uint64_t body, uint32_t off, uint32_t iseq_size) const {
  uint64_t f[4];  // body, positions, size (u32), succ_index_table
  if (!mem_.Read(body + off, f, sizeof(f))) return false;
  const uint64_t size = f[2] & 0xffffffff;
  return Canonical(f[0]) && (f[1] == 0 || Canonical(f[1])) && size >= 1 && size <= iseq_size &&
         (size == 1 || Canonical(f[3]) || f[1]);
}

absl::StatusOr<RubyIseq> RubyObjects::Iseq(uint64_t iseq) {
  auto type = ImemoType(iseq);
  if (!type.ok()) return type.status();
  if (*type != kImemoIseq) return absl::InvalidArgumentError(absl::StrFormat("0x%x is no iseq", iseq));
  auto body = U64(iseq + 16);
  if (!body.ok()) return body.status();
  uint64_t head[2], loc[3];  // {type, iseq_size}, iseq_encoded; pathobj, base_label, label
  if (!mem_.Read(*body, head, sizeof(head)) || !mem_.Read(*body + 64, loc, sizeof(loc))) {
    return absl::UnavailableError("iseq body unreadable");
  }
  RubyIseq out;
  out.size = static_cast<uint32_t>(head[0] >> 32);
  out.encoded = head[1];
  auto label = String(loc[2]);
  if (!label.ok()) return label.status();
  out.label = *label;
  if (auto base = String(loc[1]); base.ok()) out.base_label = *base;
  auto path = String(loc[0]);
  if (!path.ok()) {  // [path, realpath]
    auto first = ArrayAt(loc[0], 0);
    if (first.ok()) path = String(*first);
  }
  if (path.ok()) out.path = *path;
  if (!layout_.insns_info) {
    for (uint32_t off : kInsnsInfoCandidates) {
      if (InsnsInfoAt(*body, off, out.size)) {
        if (layout_.insns_info) return out;  // both fit: not decided on this one
        layout_.insns_info = off;
      }
    }
    if (!layout_.insns_info) return out;
  }
  uint64_t f[4];
  if (InsnsInfoAt(*body, layout_.insns_info, out.size) && mem_.Read(*body + layout_.insns_info, f, sizeof(f))) {
    out.info_body = f[0];
    out.info_positions = f[1];
    out.info_size = static_cast<uint32_t>(f[2]);
    out.info_succ = f[3];
  }
  return out;
}

absl::StatusOr<int32_t> RubyObjects::Line(const RubyIseq& iseq, uint32_t index) const {
  if (!iseq.info_body || index > iseq.size) return absl::NotFoundError("no line table");
  const uint32_t pos = index ? index - 1 : 0;  // the pc points after its instruction
  uint64_t entry = 0;
  if (iseq.info_size > 1) {
    if (!iseq.info_succ) return absl::NotFoundError("no succ_index_table");
    // The bytes the lookup of pos reads: the immediate words, the block.
    const uint64_t end = pos < kImmediate ? 48 : 48 + ((pos - kImmediate) / kBlockBits + 1) * kBlockBytes;
    std::vector<uint8_t> table(end);
    if (!mem_.Read(iseq.info_succ, table.data(), table.size())) return absl::UnavailableError("line table unreadable");
    auto rank = SuccIndexLookup(table, pos);
    if (!rank || *rank == 0 || *rank > iseq.info_size) return absl::OutOfRangeError("line table rank out of range");
    entry = *rank - 1;
  }
  int32_t line = 0;
  if (!mem_.Read(iseq.info_body + entry * kInsnInfoEntry, &line, 4)) return absl::UnavailableError("line unreadable");
  return line;
}

absl::StatusOr<uint64_t> RubyObjects::MethodEntry(uint64_t value) const {
  auto type = ImemoType(value);
  if (type.ok() && *type == kImemoSvar) {  // vm_svar {flags, cref_or_me, ...}
    auto inner = U64(value + 8);
    if (!inner.ok()) return inner.status();
    value = *inner;
    type = ImemoType(value);
  }
  if (!type.ok()) return type.status();
  if (*type != kImemoMethodEntry) return absl::InvalidArgumentError(absl::StrFormat("0x%x is no method entry", value));
  return value;
}

absl::StatusOr<uint64_t> RubyObjects::MethodIseq(uint64_t me) const {
  auto def = U64(me + 16);
  if (!def.ok()) return def.status();
  uint32_t def_type = 0;
  uint64_t iseq = 0;
  // rb_method_definition_t {type:4 and counts (8 bytes), body {iseq {iseqptr, cref}, ...}}
  if (!Canonical(*def) || !mem_.Read(*def, &def_type, 4) || !mem_.ReadU64(*def + 8, &iseq)) {
    return absl::UnavailableError("method definition unreadable");
  }
  if ((def_type & 0xf) != kMethodIseq) return absl::InvalidArgumentError("not a Ruby method");
  return iseq;
}

absl::StatusOr<std::string> RubyObjects::MethodName(uint64_t me, bool* is_cfunc) const {
  auto entry = MethodEntry(me);
  if (!entry.ok()) return entry.status();
  me = *entry;
  auto def = U64(me + 16);
  if (!def.ok()) return def.status();
  uint32_t def_type = 0;
  uint64_t original_id = 0;
  if (!Canonical(*def) || !mem_.Read(*def, &def_type, 4) || !mem_.ReadU64(*def + kDefOriginalId, &original_id)) {
    return absl::UnavailableError("method definition unreadable");
  }
  *is_cfunc = (def_type & 0xf) == kMethodCfunc;
  return IdName(original_id);
}

std::optional<uint32_t> SuccIndexLookup(std::span<const uint8_t> table, uint32_t x) {
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, table.data() + at, 8);
    return v;
  };
  if (x < kImmediate) {
    if (table.size() < 48) return std::nullopt;
    return static_cast<uint32_t>((u64((x / 9) * 8) >> ((x % 9) * 7)) & 0x7f);
  }
  const uint32_t block = (x - kImmediate) / kBlockBits, bit = (x - kImmediate) % kBlockBits;
  const size_t at = 48 + static_cast<size_t>(block) * kBlockBytes;
  if (at + kBlockBytes > table.size()) return std::nullopt;
  uint32_t rank;
  std::memcpy(&rank, table.data() + at, 4);
  const uint32_t small = bit / 64;
  const uint32_t small_rank = small == 0 ? 0 : (u64(at + 8) >> ((small - 1) * 9)) & 0x1ff;
  const uint32_t pop = std::popcount(u64(at + 16 + small * 8) << (63 - bit % 64));
  return rank + small_rank + pop;
}

}  // namespace ehprof
