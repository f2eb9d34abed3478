#include "unwind_tables/cfi_sections.h"

#include <elf.h>

#include "absl/strings/str_cat.h"
#include "base/byte_reader.h"
#include "base/status_macros.h"

namespace ehprof {
namespace {

CfiSectionRef Ref(const ElfFile& elf, CfiSectionKind kind, std::span<const uint8_t> data,
                  uint64_t vaddr) {
  CfiSectionRef ref{kind, data, vaddr, elf.path()};
  ref.arch = elf.arch();
  return ref;
}

}  // namespace

// .eh_frame by section header, else through PT_GNU_EH_FRAME's
// eh_frame_ptr (files without section headers, memory images).
absl::StatusOr<std::optional<CfiSectionRef>> LocateEhFrame(const ElfFile& elf) {
  EHP_ASSIGN_OR_RETURN(auto sec, elf.Section(".eh_frame"));
  if (sec && sec->type != SHT_NOBITS && !sec->data.empty()) {
    return Ref(elf, CfiSectionKind::kEhFrame, sec->data, sec->addr);
  }
  if (sec) return std::nullopt;  // NOBITS: a separate debug file
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type != PT_GNU_EH_FRAME) continue;
    auto hdr = elf.BytesAtVaddr(seg.vaddr, seg.filesz);
    if (!hdr) break;
    ByteReader r(*hdr);
    uint8_t version = r.u8(), ptr_enc = r.u8();
    r.u8();
    r.u8();
    uint64_t eh_vaddr = 0;
    if (version != 1 || !ReadEncodedPointer(r, ptr_enc, seg.vaddr + 4, &eh_vaddr)) {
      return absl::InvalidArgumentError(
          absl::StrCat(elf.path(), ": .eh_frame_hdr: unsupported header"));
    }
    for (const ElfSegment& load : elf.segments()) {
      if (load.type != PT_LOAD || eh_vaddr < load.vaddr ||
          eh_vaddr >= load.vaddr + load.filesz) {
        continue;
      }
      auto bytes = elf.BytesAtVaddr(eh_vaddr, load.vaddr + load.filesz - eh_vaddr);
      if (bytes) {
        return Ref(elf, CfiSectionKind::kEhFrame, *bytes, eh_vaddr);
      }
    }
    return absl::InvalidArgumentError(absl::StrCat(
        elf.path(), ": .eh_frame_hdr points outside the loaded segments"));
  }
  return std::nullopt;
}

absl::StatusOr<std::optional<CfiSectionRef>> LocateDebugFrame(const ElfFile& elf) {
  EHP_ASSIGN_OR_RETURN(auto sec, elf.Section(".debug_frame"));
  if (!sec || sec->type == SHT_NOBITS || sec->data.empty()) return std::nullopt;
  return Ref(elf, CfiSectionKind::kDebugFrame, sec->data, sec->addr);
}

}  // namespace ehprof
