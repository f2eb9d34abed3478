#include "elf/go_pclntab.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/byte_reader.h"

namespace ehprof {
namespace {

// runtime/symtab.go's indexes.
constexpr uint32_t kPcdataInlTreeIndex = 2;
constexpr uint32_t kFuncdataInlTree = 3;
// Bounds that keep hostile tables cheap: nesting of inline frames, steps of
// one pc-value walk (each step is at least two bytes, so the table's size
// bounds it too), pcdata/funcdata counts (the runtime's are below 10).
constexpr int kMaxInlineDepth = 64;
constexpr uint32_t kMaxTableSlots = 256;

// The unsigned varint of Go's pc-value tables (LEB128).
bool Uvarint(ByteReader* r, uint32_t* out) {
  uint64_t v = r->uleb128();
  *out = static_cast<uint32_t>(v);
  return r->ok() && v <= UINT32_MAX;
}

}  // namespace

absl::StatusOr<GoPclntab> GoPclntab::Parse(std::string name, Layout layout) {
  auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": .gopclntab: ", what));
  };
  ByteReader r(layout.table);
  const uint32_t magic = r.u32();
  const uint8_t pad1 = r.u8(), pad2 = r.u8(), min_lc = r.u8(), ptr_size = r.u8();
  if (!r.ok()) return bad("shorter than its header");
  if (magic != kMagic118 && magic != kMagic120) {
    return bad(absl::StrCat("magic 0x", absl::Hex(magic), " is not Go 1.18 or later's"));
  }
  if (pad1 != 0 || pad2 != 0 || min_lc != 1 || ptr_size != 8) {
    return bad("header is not a 64-bit x86 one (pad, instruction size, pointer size)");
  }
  GoPclntab t;
  t.name_ = name;
  t.table_ = layout.table;
  t.read_ = std::move(layout.read);
  t.go120_ = magic == kMagic120;
  t.gofunc_ = t.read_ ? layout.gofunc : 0;
  const uint64_t nfunc = r.u64();
  r.u64();  // nfiles
  t.text_start_ = r.u64();
  t.funcnametab_ = r.u64();
  t.cutab_ = r.u64();
  t.filetab_ = r.u64();
  t.pctab_ = r.u64();
  t.pcln_ = r.u64();
  if (!r.ok()) return bad("shorter than its header");
  if (t.text_start_ == 0) t.text_start_ = layout.text_start;
  const uint64_t size = layout.table.size();
  for (uint64_t off : {t.funcnametab_, t.cutab_, t.filetab_, t.pctab_, t.pcln_}) {
    if (off > size) {
      return bad(absl::StrCat("a table offset (", off, ") past its end (", size, ")"));
    }
  }
  // The function table: nfunc (entry, _func offset) pairs and the end pc.
  if (nfunc == 0 || nfunc > (size - t.pcln_) / 8 - 1) {
    return bad(absl::StrCat(nfunc, " functions do not fit in it"));
  }
  t.nfunc_ = static_cast<uint32_t>(nfunc);
  return t;
}

std::optional<GoPclntab::Func> GoPclntab::FuncAt(uint64_t off) const {
  // The last function whose entry is at or below off, if off is before the
  // table's end pc. Entries are sorted (the linker writes them so); a table
  // that is not makes the search land on some function, whose range check
  // below then fails or names the wrong one, never reads outside.
  ByteReader ftab(table_.subspan(pcln_));
  auto entry_at = [&](uint32_t i) {
    ftab.seek(uint64_t{i} * 8);
    return ftab.u32();
  };
  if (off >= entry_at(nfunc_) || !ftab.ok()) return std::nullopt;
  uint32_t lo = 0, hi = nfunc_;  // entry_at(lo) <= off < entry_at(hi), if sorted
  while (hi - lo > 1) {
    const uint32_t mid = lo + (hi - lo) / 2;
    (entry_at(mid) <= off ? lo : hi) = mid;
  }
  uint32_t end = 0;
  std::optional<Func> f = FuncOfSlot(lo, &end);
  if (!f || f->entry > off) return std::nullopt;
  return f;
}

std::optional<GoPclntab::Func> GoPclntab::FuncOfSlot(uint32_t i, uint32_t* end) const {
  ByteReader ftab(table_.subspan(pcln_));
  ftab.seek(uint64_t{i} * 8);
  const uint32_t entry = ftab.u32(), func_off = ftab.u32();
  *end = ftab.u32();
  if (!ftab.ok() || func_off >= table_.size() - pcln_) return std::nullopt;
  ByteReader f(table_.subspan(pcln_ + func_off));
  Func out;
  out.entry = f.u32();
  out.name = f.s32();
  f.skip(8);  // args, deferreturn
  out.pcsp = f.u32();
  out.pcfile = f.u32();
  out.pcln = f.u32();
  const uint32_t npcdata = f.u32();
  out.cu = f.u32();
  if (go120_) f.s32();  // startLine
  f.u8();               // funcID
  out.flag = f.u8();
  f.u8();               // pad
  const uint32_t nfuncdata = f.u8();
  if (!f.ok() || out.entry != entry || npcdata > kMaxTableSlots) return std::nullopt;
  ByteReader pcdata = f.sub(uint64_t{npcdata} * 4);
  ByteReader funcdata = f.sub(uint64_t{nfuncdata} * 4);
  if (!f.ok()) return std::nullopt;
  if (npcdata > kPcdataInlTreeIndex) {
    pcdata.seek(kPcdataInlTreeIndex * 4);
    out.inl_index_table = pcdata.u32();
  }
  if (nfuncdata > kFuncdataInlTree && gofunc_ != 0) {
    funcdata.seek(kFuncdataInlTree * 4);
    const uint32_t off = funcdata.u32();
    if (off != UINT32_MAX) out.inl_tree = gofunc_ + off;
  }
  return out;
}

bool GoPclntab::WalkPcValues(uint32_t table, uint32_t entry, uint64_t end,
                             const std::function<bool(uint64_t, uint64_t, int32_t)>& step) const {
  if (table == 0 || pctab_ + table >= table_.size()) return false;
  ByteReader r(table_.subspan(pctab_ + table));
  int32_t value = -1;
  uint64_t pc = entry;
  for (bool first = true; pc < end; first = false) {
    uint32_t uvdelta = 0, pcdelta = 0;
    if (!Uvarint(&r, &uvdelta)) return false;
    if (uvdelta == 0 && !first) return true;  // the table's end
    // Zig-zag: the low bit is the sign. Added as Go's runtime adds it, in
    // 32 bits that wrap (a hostile table's deltas may overflow; signed
    // overflow would be undefined).
    const uint32_t delta = (uvdelta & 1) ? ~(uvdelta >> 1) : (uvdelta >> 1);
    value = static_cast<int32_t>(static_cast<uint32_t>(value) + delta);
    if (!Uvarint(&r, &pcdelta)) return false;
    const uint64_t next = pc + pcdelta;  // times the instruction quantum, 1 on x86
    if (!step(pc, std::min(next, end), value)) return true;
    pc = next;
  }
  return true;
}

int32_t GoPclntab::PcValue(uint32_t table, uint32_t entry, uint64_t target) const {
  int32_t found = -1;
  WalkPcValues(table, entry, UINT64_MAX, [&](uint64_t, uint64_t next, int32_t value) {
    if (target >= next) return true;
    found = value;
    return false;
  });
  return found;
}

absl::Status GoPclntab::ForEachSpDelta(const SpDeltaFn& fn, size_t max_ranges) const {
  size_t ranges = 0;
  for (uint32_t i = 0; i < nfunc_; ++i) {
    uint32_t end = 0;
    const std::optional<Func> f = FuncOfSlot(i, &end);
    if (!f || end < f->entry || uint64_t{end} > UINT64_MAX - text_start_) {
      return absl::InvalidArgumentError(
          absl::StrCat(name_, ": .gopclntab: function ", i, " of ", nfunc_, " does not read"));
    }
    if (f->pcsp == 0) continue;  // no pcsp table: nothing known there
    bool too_many = false;
    const bool ok = WalkPcValues(f->pcsp, f->entry, end, [&](uint64_t pc, uint64_t next, int32_t v) {
      if (++ranges > max_ranges) {
        too_many = true;
        return false;
      }
      if (next > pc) fn(text_start_ + pc, text_start_ + next, v, f->flag);
      return true;
    });
    if (too_many) {
      return absl::ResourceExhaustedError(
          absl::StrCat(name_, ": .gopclntab: more than ", max_ranges, " stack-pointer ranges"));
    }
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrCat(name_, ": .gopclntab: the pcsp table of ",
                                                     NameAt(f->name), " does not read"));
    }
  }
  return absl::OkStatus();
}

std::string GoPclntab::NameAt(int32_t off) const {
  if (off < 0 || funcnametab_ + off >= table_.size()) return "";
  ByteReader r(table_.subspan(funcnametab_ + off));
  return std::string(r.cstr());
}

std::string GoPclntab::FileAt(uint32_t cu, int32_t index) const {
  if (index < 0) return "";
  ByteReader c(table_.subspan(cutab_));
  c.seek((uint64_t{cu} + static_cast<uint32_t>(index)) * 4);
  const uint32_t off = c.u32();
  if (!c.ok() || off == UINT32_MAX || filetab_ + off >= table_.size()) return "";
  ByteReader r(table_.subspan(filetab_ + off));
  return std::string(r.cstr());
}

std::vector<GoPclntab::Frame> GoPclntab::Frames(uint64_t vaddr) const {
  std::vector<Frame> out;
  if (vaddr < text_start_) return out;
  uint64_t off = vaddr - text_start_;
  const std::optional<Func> f = FuncAt(off);
  if (!f) return out;
  const size_t entry_size = go120_ ? 16 : 20;
  int32_t ix = f->inl_tree ? PcValue(f->inl_index_table, f->entry, off) : -1;
  for (int depth = 0; depth < kMaxInlineDepth; ++depth) {
    Frame sf;
    sf.file = FileAt(f->cu, PcValue(f->pcfile, f->entry, off));
    const int32_t line = PcValue(f->pcln, f->entry, off);
    sf.line = line > 0 ? static_cast<uint32_t>(line) : 0;
    std::optional<std::span<const uint8_t>> inl;
    if (ix >= 0) inl = read_(f->inl_tree + uint64_t(ix) * entry_size, entry_size);
    if (!inl) {
      sf.function = NameAt(f->name);
      if (sf.function.empty()) return {};  // a broken table: nothing named from it
      out.push_back(std::move(sf));
      return out;
    }
    // inlinedCall: Go 1.20+ {funcID u8, _ [3]u8, nameOff, parentPc,
    // startLine int32}; Go 1.18-1.19 {parent int16, funcID u8, _ u8, file,
    // line, func_, parentPc int32}.
    ByteReader r(*inl);
    r.skip(go120_ ? 4 : 12);
    const int32_t name = r.s32();
    const int32_t parent_pc = r.s32();
    sf.function = NameAt(name);
    sf.inlined = true;
    if (!r.ok() || parent_pc < 0 || sf.function.empty()) {
      ix = -1;  // a broken entry: the function itself is still known
      continue;
    }
    out.push_back(std::move(sf));
    off = uint64_t{f->entry} + static_cast<uint32_t>(parent_pc);
    ix = PcValue(f->inl_index_table, f->entry, off);
  }
  return {};  // nested too deep: a cycle in a hostile tree
}

std::optional<uint64_t> GoPclntab::FunctionStart(uint64_t vaddr) const {
  if (vaddr < text_start_) return std::nullopt;
  const std::optional<Func> f = FuncAt(vaddr - text_start_);
  if (!f) return std::nullopt;
  return text_start_ + f->entry;
}

}  // namespace ehprof
