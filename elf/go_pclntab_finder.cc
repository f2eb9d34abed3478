#include "elf/go_pclntab_finder.h"

#include <elf.h>

#include <cstring>

#include "base/byte_reader.h"

namespace ehprof {
namespace {

// moduledata's word index of gofunc: after pcHeader, the six slices of
// tables, findfunctab, minpc/maxpc, text/etext and the four data/bss
// pairs (32 words), Go 1.18-1.19 has end, gcdata, gcbss, types, etypes,
// rodata; Go 1.20 added covctrs/ecovctrs before end. (runtime/symtab.go;
// checked on Go 1.19 and 1.26 binaries against their go:func.* symbol.)
constexpr size_t kGofuncWord118 = 38;
constexpr size_t kGofuncWord120 = 40;
constexpr size_t kTextWord = 22;

// The pcHeader's magic at an 8-aligned offset of a read-only segment,
// followed by the header bytes a 64-bit x86 one has.
std::optional<uint64_t> ScanForHeader(const ElfFile& elf) {
  for (const ElfSegment& s : elf.segments()) {
    if (s.type != PT_LOAD || (s.flags & (PF_X | PF_W))) continue;
    auto bytes = elf.BytesAtVaddr(s.vaddr, s.filesz);
    if (!bytes) continue;
    for (uint64_t off = (8 - s.vaddr % 8) % 8; off + 8 <= bytes->size(); off += 8) {
      const uint8_t* p = bytes->data() + off;
      uint32_t magic;
      std::memcpy(&magic, p, 4);
      if ((magic == GoPclntab::kMagic118 || magic == GoPclntab::kMagic120) && p[4] == 0 &&
          p[5] == 0 && p[6] == 1 && p[7] == 8) {
        return s.vaddr + off;
      }
    }
  }
  return std::nullopt;
}

// moduledata.text (word 22: after pcHeader, six table slices, ftab,
// findfunctab, minpc, maxpc) and gofunc, from the moduledata whose first
// two words are the header's address and its funcnametab's; zeros when
// none is found (a PIE's pointers are relocated at load time and read 0 in
// the file).
struct Moduledata {
  uint64_t text = 0, gofunc = 0;
};
Moduledata FindModuledata(const ElfFile& elf, uint64_t header, uint64_t funcnametab, bool go120) {
  const size_t word = go120 ? kGofuncWord120 : kGofuncWord118;
  for (const ElfSegment& s : elf.segments()) {
    if (s.type != PT_LOAD || !(s.flags & PF_W)) continue;
    auto bytes = elf.BytesAtVaddr(s.vaddr, s.filesz);
    if (!bytes) continue;
    for (uint64_t off = (8 - s.vaddr % 8) % 8; off + 8 * (word + 1) <= bytes->size(); off += 8) {
      ByteReader r(bytes->subspan(off, 8 * (word + 1)));
      if (r.u64() != header || r.u64() != header + funcnametab) continue;
      Moduledata m;
      r.seek(8 * kTextWord);
      m.text = r.u64();
      r.seek(8 * word);
      m.gofunc = r.u64();
      if (!elf.BytesAtVaddr(m.gofunc, 1)) m.gofunc = 0;
      return m;
    }
  }
  return {};
}

}  // namespace

absl::StatusOr<std::optional<GoPclntab>> FindGoPclntab(const ElfFile& elf) {
  std::span<const uint8_t> table;
  uint64_t addr = 0;
  auto sec = elf.Section(".gopclntab");
  if (sec.ok() && *sec && !(*sec)->data.empty()) {
    table = (*sec)->data;
    addr = (*sec)->addr;
  } else if (std::optional<uint64_t> at = ScanForHeader(elf)) {
    // Without the section's size the table runs to its segment's end.
    addr = *at;
    for (const ElfSegment& s : elf.segments()) {
      if (s.type == PT_LOAD && addr >= s.vaddr && addr < s.vaddr + s.filesz) {
        table = elf.BytesAtVaddr(addr, s.vaddr + s.filesz - addr).value_or(table);
      }
    }
  }
  if (table.size() < 8) return std::nullopt;
  GoPclntab::Layout layout;
  layout.table = table;
  if (auto text = elf.Section(".text"); text.ok() && *text) {
    layout.text_start = (*text)->addr;
  } else {
    for (const ElfSegment& s : elf.segments()) {
      if (s.type == PT_LOAD && (s.flags & PF_X)) {
        layout.text_start = s.vaddr;
        break;
      }
    }
  }
  ByteReader h(table);
  const bool go120 = h.u32() == GoPclntab::kMagic120;
  h.seek(8 + 8 * 3);  // magic, pads, sizes; nfunc, nfiles, textStart
  const uint64_t funcnametab = h.u64();
  if (addr != 0 && h.ok()) {
    // Go 1.26 writes textStart 0 in the header even outside a PIE; the
    // moduledata's text is the runtime's own base for the function table.
    const Moduledata m = FindModuledata(elf, addr, funcnametab, go120);
    layout.gofunc = m.gofunc;
    if (m.text != 0) layout.text_start = m.text;
  }
  layout.read = [&elf](uint64_t vaddr, uint64_t size) { return elf.BytesAtVaddr(vaddr, size); };
  auto parsed = GoPclntab::Parse(elf.path(), std::move(layout));
  if (!parsed.ok()) return parsed.status();
  return std::optional<GoPclntab>(std::move(*parsed));
}

}  // namespace ehprof
