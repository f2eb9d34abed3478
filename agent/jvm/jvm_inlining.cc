#include "agent/jvm/jvm_inlining.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "agent/jvm/unsigned5.h"

namespace ehprof {

namespace {

// What HotSpot names every compiled method's blob ("nmethod\0").
constexpr uint64_t kNmethodName = 0x00646f6874656d6eull;
// A section of one nmethod's debug info larger than this is not read.
constexpr uint64_t kMaxSection = uint64_t{4} << 20;

struct Range {
  uint64_t lo = 0, hi = 0;
  bool Valid() const { return lo != 0 && lo <= hi && hi - lo <= kMaxSection; }
};

struct Nmethod {
  uint64_t at = 0, code_begin = 0, method = 0;
  Range pcs, data, metadata;
};

std::string Hex(uint64_t v) { return absl::StrCat("0x", absl::Hex(v)); }

// The blob whose code holds pc, through its heap's segment map (as
// bpf/hotspot.bpf.h's jvm_find_blob).
absl::StatusOr<uint64_t> FindBlob(const ProcessMemory& mem, const ehp_jvm_proc& p, uint64_t pc) {
  for (int i = 0; i < p.nheaps && i < EHP_JVM_HEAPS; ++i) {
    const ehp_jvm_heap& h = p.heaps[i];
    if (pc < h.low || pc >= h.high || p.log2_segment > 20) continue;
    uint64_t seg = (pc - h.low) >> p.log2_segment;
    for (int hop = 0; hop < EHP_JVM_SEGMAP_HOPS; ++hop) {
      uint8_t tag = 0xff;
      if (!mem.Read(h.segmap + seg, &tag, 1) || tag == 0xff || tag > seg) break;
      if (tag == 0) return h.low + (seg << p.log2_segment) + p.heap_block;
      seg -= tag;
    }
    return absl::NotFoundError(absl::StrCat("no code blob at ", Hex(pc)));
  }
  return absl::NotFoundError(absl::StrCat(Hex(pc), " is in no code heap"));
}

bool ReadI32(const ProcessMemory& mem, uint64_t addr, int32_t* out) { return mem.Read(addr, out, sizeof(*out)); }

// The debug info sections of the nmethod at `at` (nmethod.hpp's
// scopes_pcs_begin/end, scopes_data_begin/end, metadata_begin/end).
bool ReadSections(const ProcessMemory& mem, const InlineFields& f, Nmethod* nm) {
  int32_t a = 0, b = 0, c = 0;
  uint64_t base = 0, other = 0;
  if (f.immutable) {
    if (!mem.ReadU64(nm->at + f.immutable_data, &base) || !ReadI32(mem, nm->at + f.scopes_pcs, &a) ||
        !ReadI32(mem, nm->at + f.scopes_data, &b) || !ReadI32(mem, nm->at + f.immutable_size, &c) || a < 0 ||
        b < a || c < b) {
      return false;
    }
    nm->pcs = {base + static_cast<uint32_t>(a), base + static_cast<uint32_t>(b)};
    nm->data = {base + static_cast<uint32_t>(b), base + static_cast<uint32_t>(c)};
    if (!mem.ReadU64(nm->at + f.mutable_data, &other) || !ReadI32(mem, nm->at + f.relocation_size, &a) ||
        !ReadI32(mem, nm->at + f.mutable_size, &b) || a < 0 || b < a) {
      return false;
    }
    nm->metadata = {other + static_cast<uint32_t>(a), other + static_cast<uint32_t>(b)};
    return true;
  }
  if (!ReadI32(mem, nm->at + f.scopes_pcs, &a) || !ReadI32(mem, nm->at + f.dependencies, &b) ||
      !ReadI32(mem, nm->at + f.metadata, &c) || !mem.ReadU64(nm->at + f.scopes_data_begin, &other) || a < 0 ||
      b < a || c < 0) {
    return false;
  }
  nm->pcs = {nm->at + static_cast<uint32_t>(a), nm->at + static_cast<uint32_t>(b)};
  nm->data = {other, nm->at + static_cast<uint32_t>(a)};
  nm->metadata = {nm->at + static_cast<uint32_t>(c), other};
  return true;
}

absl::StatusOr<Nmethod> ReadNmethod(const ProcessMemory& mem, const ehp_jvm_proc& p, const InlineFields& f,
                                    uint64_t lookup_pc) {
  auto blob = FindBlob(mem, p, lookup_pc);
  if (!blob.ok()) return blob.status();
  Nmethod nm;
  nm.at = *blob;
  uint64_t name_ptr = 0, name = 0;
  if (!mem.ReadU64(nm.at + p.blob_name, &name_ptr) || !mem.ReadU64(name_ptr, &name) || name != kNmethodName) {
    return absl::NotFoundError(absl::StrCat("the blob at ", Hex(nm.at), " is no nmethod"));
  }
  int32_t code_offset = 0;
  const bool code = p.code_begin_is_offset
                        ? ReadI32(mem, nm.at + p.blob_code_begin, &code_offset) && code_offset > 0
                        : mem.ReadU64(nm.at + p.blob_code_begin, &nm.code_begin);
  if (p.code_begin_is_offset) nm.code_begin = nm.at + static_cast<uint32_t>(code_offset);
  if (!code || !mem.ReadU64(nm.at + p.nmethod_method, &nm.method) || !ReadSections(mem, f, &nm)) {
    return absl::UnavailableError(absl::StrCat("nmethod at ", Hex(nm.at), " unreadable"));
  }
  if (!nm.pcs.Valid() || !nm.data.Valid() || !nm.metadata.Valid()) {
    return absl::InvalidArgumentError(absl::StrCat("nmethod at ", Hex(nm.at), ": debug info sections [",
                                                   Hex(nm.pcs.lo), ", ", Hex(nm.pcs.hi), "), [",
                                                   Hex(nm.data.lo), ", ", Hex(nm.data.hi), "), metadata [",
                                                   Hex(nm.metadata.lo), ", ", Hex(nm.metadata.hi), ")"));
  }
  return nm;
}

absl::StatusOr<std::vector<uint8_t>> ReadRange(const ProcessMemory& mem, const Range& r) {
  std::vector<uint8_t> out(r.hi - r.lo);
  if (!out.empty() && !mem.Read(r.lo, out.data(), out.size())) {
    return absl::UnavailableError(absl::StrCat("[", Hex(r.lo), ", ", Hex(r.hi), ") unreadable"));
  }
  return out;
}

// The scope decode offset of the first PcDesc at or after pc_offset
// (PcDescs are sorted by pc offset). A PcDesc's offset is where the code it
// describes ends: a call's return address, the end of a stretch of inlined
// code (C2's NonSafepointEmitter records a scope once its instructions are
// emitted).
absl::StatusOr<int32_t> ScopeOffsetAt(const ProcessMemory& mem, const InlineFields& f, const Nmethod& nm,
                                      int64_t pc_offset) {
  auto pcs = ReadRange(mem, nm.pcs);
  if (!pcs.ok()) return pcs.status();
  for (size_t at = 0; at + f.pc_desc_size <= pcs->size(); at += f.pc_desc_size) {
    int32_t pc = 0, scope = 0;
    std::memcpy(&pc, pcs->data() + at + f.pc_desc_pc, sizeof(pc));
    std::memcpy(&scope, pcs->data() + at + f.pc_desc_scope, sizeof(scope));
    if (pc >= pc_offset) return scope;
  }
  return absl::NotFoundError(absl::StrCat("nmethod at ", Hex(nm.at), ": no PcDesc at or after pc offset ",
                                          pc_offset));
}

// The scope chain from decode offset `at` (ScopeDesc::decode_body: the
// sender's decode offset, the method's metadata index, the bci plus 1;
// the chain ends at a sender offset 0, DebugInformationRecorder's
// serialized_null).
absl::StatusOr<std::vector<JvmScope>> DecodeScopes(const ProcessMemory& mem, const Nmethod& nm, int32_t at,
                                                   int unsigned5_x) {
  auto data = ReadRange(mem, nm.data);
  if (!data.ok()) return data.status();
  const uint64_t metadata_count = (nm.metadata.hi - nm.metadata.lo) / 8;
  std::vector<JvmScope> out;
  for (uint32_t offset = static_cast<uint32_t>(at); offset != 0;) {
    if (offset >= data->size() || out.size() >= kMaxJvmScopes) {
      return absl::InvalidArgumentError(absl::StrCat("nmethod at ", Hex(nm.at), ": scope at ", offset, " of ",
                                                     data->size(), " bytes, ", out.size(), " scopes deep"));
    }
    Unsigned5 in(std::span<const uint8_t>(*data).subspan(offset), unsigned5_x);
    uint32_t sender = 0, index = 0, bci = 0;
    JvmScope scope;
    if (!in.Uint(&sender) || !in.Uint(&index) || !in.Uint(&bci) || index == 0 || index > metadata_count ||
        !mem.ReadU64(nm.metadata.lo + 8 * (index - 1), &scope.method) || scope.method == 0) {
      return absl::InvalidArgumentError(absl::StrCat("nmethod at ", Hex(nm.at), ": scope at ", offset,
                                                     " unreadable (metadata index ", index, " of ",
                                                     metadata_count, ")"));
    }
    scope.bci = static_cast<int32_t>(bci) - 1;
    out.push_back(scope);
    offset = sender;
  }
  return out;
}

}  // namespace

absl::StatusOr<JvmScopes> ReadJvmScopes(const ProcessMemory& mem, const ehp_jvm_proc& proc,
                                         const InlineFields& f, uint64_t pc, bool leaf, uint64_t method,
                                         int unsigned5_x) {
  if (!f.usable) return absl::FailedPreconditionError("the JVM's tables do not describe its debug info");
  auto nm = ReadNmethod(mem, proc, f, leaf ? pc : pc - 1);
  if (!nm.ok()) return nm.status();
  JvmScopes out;
  out.nmethod = nm->at;
  out.method = nm->method;
  if (!ReadI32(mem, nm->at + f.compile_id, &out.compile_id)) {
    return absl::UnavailableError(absl::StrCat("nmethod at ", Hex(nm->at), " unreadable"));
  }
  if (EHP_JVM_FRAME_METHOD(nm->method >> 3 & EHP_JVM_METHOD_MASK) != method) {
    return absl::NotFoundError(absl::StrCat("nmethod at ", Hex(nm->at), " is of Method* ", Hex(nm->method),
                                            ", not ", Hex(method)));
  }
  if (pc < nm->code_begin || pc - nm->code_begin > kMaxSection * 64) {
    return absl::InvalidArgumentError(absl::StrCat(Hex(pc), " is before nmethod ", Hex(nm->at), "'s code"));
  }
  // An interrupted pc is the first byte of the instruction about to run,
  // which the PcDesc at its end describes: one at pc itself ends the
  // instruction before (HotSpot's forte.cpp looks up pc + 1 alike).
  const int64_t pc_offset = static_cast<int64_t>(pc - nm->code_begin) + (leaf ? 1 : 0);
  auto offset = ScopeOffsetAt(mem, f, *nm, pc_offset);
  if (!offset.ok()) return offset.status();
  if (*offset <= 0) {
    return absl::NotFoundError(absl::StrCat("nmethod at ", Hex(nm->at), ": no scope at ", Hex(pc)));
  }
  auto scopes = DecodeScopes(mem, *nm, *offset, unsigned5_x);
  if (!scopes.ok()) return scopes.status();
  if (scopes->empty() || scopes->back().method != nm->method) {
    return absl::InvalidArgumentError(absl::StrCat("nmethod at ", Hex(nm->at), ": its outer scope is not ",
                                                   Hex(nm->method)));
  }
  out.scopes = std::move(*scopes);
  return out;
}

bool SameJvmNmethod(const ProcessMemory& mem, const ehp_jvm_proc& proc, const InlineFields& f,
                    const JvmScopes& s) {
  uint64_t method = 0;
  int32_t compile_id = 0;
  return mem.ReadU64(s.nmethod + proc.nmethod_method, &method) && method == s.method &&
         ReadI32(mem, s.nmethod + f.compile_id, &compile_id) && compile_id == s.compile_id;
}

}  // namespace ehprof
