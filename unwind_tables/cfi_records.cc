#include "unwind_tables/cfi_records.h"

#include <dwarf.h>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/byte_reader.h"

namespace ehprof {
namespace {

constexpr uint8_t kEhPeOmit = DW_EH_PE_omit;

class Parser {
 public:
  explicit Parser(const CfiSectionRef& s) : s_(s), r_(s.data) {}

  absl::StatusOr<CfiRecords> Run() {
    CfiRecords out;
    out.kind = s_.kind;
    out.section_vaddr = s_.vaddr;
    out.section_data = s_.data;
    out.file = s_.file;
    out.arch = s_.arch;
    while (!r_.at_end()) {
      const uint64_t entry_off = r_.offset();
      uint64_t length = r_.u32();
      bool dwarf64 = false;
      if (length == 0xffffffffu) {
        length = r_.u64();
        dwarf64 = true;
      }
      if (!r_.ok()) return Error(entry_off, "truncated entry length");
      if (length == 0) {
        if (eh()) break;  // .eh_frame's terminator
        continue;         // .debug_frame padding
      }
      if (length > r_.remaining()) {
        return Error(entry_off, absl::StrFormat(
            "entry length 0x%x runs past the section end", length));
      }
      const uint64_t id_off = r_.offset();
      ByteReader body = r_.sub(length);
      uint64_t id = (dwarf64 && !eh()) ? body.u64() : body.u32();
      if (!body.ok()) return Error(entry_off, "truncated CIE id");
      bool is_cie = eh() ? id == 0
                         : id == (dwarf64 ? ~uint64_t{0} : 0xffffffffu);
      if (is_cie) {
        if (cie_index_.contains(entry_off)) continue;  // parsed out of order
        auto st = ParseCie(entry_off, body, &out);
        if (!st.ok()) return st;
        continue;
      }
      uint64_t cie_off = eh() ? id_off - id : id;
      if (eh() && id > id_off) {
        return Error(entry_off, "CIE pointer points before the section start");
      }
      auto st = ParseFde(entry_off, cie_off, body, &out);
      if (!st.ok()) return st;
    }
    return out;
  }

 private:
  bool eh() const { return s_.kind == CfiSectionKind::kEhFrame; }

  absl::Status Error(uint64_t off, std::string_view what) const {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s: entry at 0x%x: %s", s_.file, CfiSectionName(s_.kind), off, what));
  }

  absl::Status ParseCie(uint64_t entry_off, ByteReader& b, CfiRecords* out) {
    Cie cie;
    cie.offset = entry_off;
    uint8_t version = b.u8();
    if (version != 1 && version != 3 && version != 4) {
      return Error(entry_off, absl::StrCat("unsupported CIE version ", version));
    }
    std::string_view aug = b.cstr();
    if (version == 4) {
      cie.address_size = b.u8();
      uint8_t segment_size = b.u8();
      if (cie.address_size != 8 || segment_size != 0) {
        return Error(entry_off, "unsupported address or segment size");
      }
    }
    cie.code_align = b.uleb128();
    cie.data_align = b.sleb128();
    cie.ra_reg = version == 1 ? b.u8() : b.uleb128();
    if (!b.ok()) return Error(entry_off, "truncated CIE header");
    if (!aug.empty()) {
      if (aug[0] != 'z') {
        return Error(entry_off, absl::StrCat("unsupported CIE augmentation \"",
                                             std::string(aug), "\""));
      }
      cie.has_augmentation_data = true;
      uint64_t aug_len = b.uleb128();
      ByteReader a = b.sub(aug_len);
      if (!b.ok()) return Error(entry_off, "augmentation data past the CIE end");
      for (size_t i = 1; i < aug.size(); ++i) {
        switch (aug[i]) {
          case 'R': cie.fde_encoding = a.u8(); break;
          case 'L': a.u8(); break;  // LSDA pointers are not needed to unwind
          case 'P': {
            uint8_t enc = a.u8();
            uint64_t ignored;
            if (!ReadEncodedPointerLenient(a, enc, s_.vaddr + a.abs_offset(),
                                           &ignored)) {
              return Error(entry_off, "bad personality pointer encoding");
            }
            break;
          }
          case 'S': cie.signal_frame = true; break;
          case 'B': case 'G': break;  // AArch64 BTI / MTE: no data
          default:
            // 'z' promises every later character's data fits in aug_len,
            // so the rest can be skipped safely.
            i = aug.size();
            break;
        }
      }
      if (!a.ok()) return Error(entry_off, "truncated augmentation data");
    }
    cie.initial_instructions = std::span<const uint8_t>(b.pos(), b.remaining());
    cie_index_[entry_off] = static_cast<uint32_t>(out->cies.size());
    out->cies.push_back(cie);
    return absl::OkStatus();
  }

  absl::Status ParseFde(uint64_t entry_off, uint64_t cie_off, ByteReader& b,
                        CfiRecords* out) {
    auto it = cie_index_.find(cie_off);
    if (it == cie_index_.end()) {
      // A CIE that follows its FDEs is legal; parse it out of order.
      auto st = ParseCieAt(entry_off, cie_off, out);
      if (!st.ok()) return st;
      it = cie_index_.find(cie_off);
    }
    const Cie& cie = out->cies[it->second];
    Fde fde;
    fde.offset = entry_off;
    fde.cie = it->second;
    uint64_t begin = 0, range = 0;
    if (eh()) {
      const uint64_t field_vaddr = s_.vaddr + b.abs_offset();
      if (!ReadEncodedPointer(b, cie.fde_encoding, field_vaddr, &begin)) {
        if (!b.ok()) return Error(entry_off, "truncated FDE");
        return Error(entry_off, absl::StrFormat(
            "unsupported FDE pointer encoding 0x%x", cie.fde_encoding));
      }
      // The range uses the same format but no base (DW_EH_PE application).
      if (!ReadEncodedPointer(b, cie.fde_encoding & 0x0f, 0, &range)) {
        return Error(entry_off, "bad FDE range encoding");
      }
    } else {
      begin = b.u64();
      range = b.u64();
    }
    if (cie.has_augmentation_data) b.skip(b.uleb128());
    if (!b.ok()) return Error(entry_off, "truncated FDE");
    if (range > ~begin) return Error(entry_off, "FDE range wraps around");
    fde.pc_begin = begin;
    fde.pc_end = begin + range;
    fde.instructions = std::span<const uint8_t>(b.pos(), b.remaining());
    if (out->fdes.size() == s_.max_fdes) {
      return Error(entry_off, absl::StrFormat("more than %d FDEs", s_.max_fdes));
    }
    out->fdes.push_back(fde);
    return absl::OkStatus();
  }

  // Parses the CIE at `cie_off` without moving the main cursor.
  absl::Status ParseCieAt(uint64_t fde_off, uint64_t cie_off, CfiRecords* out) {
    ByteReader r(s_.data);
    r.seek(cie_off);
    uint64_t length = r.u32();
    bool dwarf64 = false;
    if (length == 0xffffffffu) {
      length = r.u64();
      dwarf64 = true;
    }
    if (!r.ok() || length == 0 || length > r.remaining()) {
      return Error(fde_off, absl::StrFormat("CIE pointer 0x%x is not a valid entry",
                                            cie_off));
    }
    ByteReader body = r.sub(length);
    uint64_t id = (dwarf64 && !eh()) ? body.u64() : body.u32();
    bool is_cie = eh() ? id == 0 : id == (dwarf64 ? ~uint64_t{0} : 0xffffffffu);
    if (!body.ok() || !is_cie) {
      return Error(fde_off, absl::StrFormat(
          "CIE pointer 0x%x does not point to a CIE", cie_off));
    }
    return ParseCie(cie_off, body, out);
  }

  // The personality routine is not needed to unwind: only its size
  // matters, so any application (datarel, indirect...) is accepted.
  static bool ReadEncodedPointerLenient(ByteReader& r, uint8_t enc,
                                        uint64_t /*field_vaddr*/, uint64_t* out) {
    if (enc == kEhPeOmit) return true;
    if (enc & 0x70 && (enc & 0x70) > DW_EH_PE_aligned) return false;
    return ReadEncodedPointer(r, enc & 0x0f, 0, out);
  }

  const CfiSectionRef& s_;
  ByteReader r_;
  absl::flat_hash_map<uint64_t, uint32_t> cie_index_;
};

}  // namespace

const char* CfiSectionName(CfiSectionKind kind) {
  return kind == CfiSectionKind::kEhFrame ? ".eh_frame" : ".debug_frame";
}

bool ReadEncodedPointer(ByteReader& r, uint8_t encoding, uint64_t field_vaddr,
                        uint64_t* out) {
  uint64_t v = 0;
  switch (encoding & 0x0f) {
    case DW_EH_PE_absptr: v = r.u64(); break;
    case DW_EH_PE_uleb128: v = r.uleb128(); break;
    case DW_EH_PE_udata2: v = r.u16(); break;
    case DW_EH_PE_udata4: v = r.u32(); break;
    case DW_EH_PE_udata8: v = r.u64(); break;
    case DW_EH_PE_sleb128: v = static_cast<uint64_t>(r.sleb128()); break;
    case DW_EH_PE_sdata2: v = static_cast<uint64_t>(int64_t{r.s16()}); break;
    case DW_EH_PE_sdata4: v = static_cast<uint64_t>(int64_t{r.s32()}); break;
    case DW_EH_PE_sdata8: v = r.u64(); break;
    default: return false;
  }
  switch (encoding & 0xf0) {
    case DW_EH_PE_absptr: break;
    case DW_EH_PE_pcrel: v += field_vaddr; break;
    default: return false;
  }
  *out = v;
  return r.ok();
}

absl::StatusOr<CfiRecords> ParseCfiRecords(const CfiSectionRef& section) {
  return Parser(section).Run();
}

}  // namespace ehprof
