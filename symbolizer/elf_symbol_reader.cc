#include "symbolizer/elf_symbol_reader.h"

#include <elf.h>

#include <cstring>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace ehprof::symbolizer_internal {
namespace {

int BindingRank(unsigned char info) {
  switch (GELF_ST_BIND(info)) {
    case STB_GLOBAL:
    case STB_GNU_UNIQUE:
      return 2;
    case STB_WEAK:
      return 1;
    default:
      return 0;
  }
}

// The string table a symbol or relocation section links to.
absl::StatusOr<size_t> LinkedStrtab(const ElfFile& img, const ElfSectionHeader& symtab) {
  const ElfSectionHeader* strtab = img.HeaderAt(symtab.header.sh_link);
  if (!strtab || strtab->header.sh_type != SHT_STRTAB) {
    return img.Error(absl::StrCat("section ", std::string(symtab.name),
                                  " does not link to a string table"));
  }
  return strtab->index;
}

// The number of `type` entries in `d`; an error past kMaxTableEntries.
absl::StatusOr<size_t> EntryCount(const ElfFile& img, const ElfSectionHeader& s, const Elf_Data* d,
                                  Elf_Type type) {
  const size_t ent = gelf_fsize(img.elf(), type, 1, EV_CURRENT);
  const size_t n = ent ? d->d_size / ent : 0;
  if (n > kMaxTableEntries) {
    return absl::ResourceExhaustedError(absl::StrCat(
        img.path(), ": section ", std::string(s.name), " holds ", n, " entries, over the ",
        kMaxTableEntries, " a table may have: not read"));
  }
  return n;
}

// GOT slot address -> symbol name, from the relocations the PLT stubs jump
// through.
absl::StatusOr<absl::flat_hash_map<uint64_t, std::string>> GotSlotNames(
    const ElfFile& img) {
  absl::flat_hash_map<uint64_t, std::string> names;
  for (const ElfSectionHeader& rs : img.headers()) {
    // Compressed relocations are debug sections' (ET_REL), never the PLT's.
    if (rs.header.sh_type != SHT_RELA || (rs.header.sh_flags & SHF_COMPRESSED)) continue;
    const ElfSectionHeader* symtab = img.HeaderAt(rs.header.sh_link);
    if (!symtab || (symtab->header.sh_type != SHT_DYNSYM &&
                    symtab->header.sh_type != SHT_SYMTAB)) {
      continue;  // e.g. ET_REL's relocations, or an unlinked table
    }
    EHP_ASSIGN_OR_RETURN(size_t strndx, LinkedStrtab(img, *symtab));
    EHP_ASSIGN_OR_RETURN(Elf_Data * rd, img.RawData(rs));
    EHP_ASSIGN_OR_RETURN(Elf_Data * sd, img.RawData(*symtab));
    EHP_ASSIGN_OR_RETURN(size_t n, EntryCount(img, rs, rd, ELF_T_RELA));
    for (size_t i = 0; i < n; ++i) {
      GElf_Rela r;
      if (!gelf_getrela(rd, static_cast<int>(i), &r)) break;
      const uint64_t type = GELF_R_TYPE(r.r_info);
      const bool slot = img.machine() == EM_AARCH64
                            ? type == R_AARCH64_JUMP_SLOT || type == R_AARCH64_GLOB_DAT
                            : type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT;
      if (!slot) continue;
      GElf_Sym sym;
      size_t symi = GELF_R_SYM(r.r_info);
      if (symi == 0 || !gelf_getsym(sd, static_cast<int>(symi), &sym)) continue;
      const char* name = elf_strptr(img.elf(), strndx, sym.st_name);
      if (!name || !*name) continue;
      names.try_emplace(r.r_offset, name);
    }
  }
  return names;
}

// The GOT slot an x86-64 PLT entry jumps through: `jmp *disp32(%rip)`
// (ff 25), possibly after `bnd` (f2) and/or `endbr64` (f3 0f 1e fa).
std::optional<uint64_t> JumpSlot(const uint8_t* p, size_t n, uint64_t addr) {
  static constexpr uint8_t kEndbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
  size_t at = 0;
  if (n >= 4 && std::memcmp(p, kEndbr64, 4) == 0) at = 4;
  if (at < n && p[at] == 0xf2) ++at;
  if (at + 6 > n || p[at] != 0xff || p[at + 1] != 0x25) return std::nullopt;
  int32_t disp;
  std::memcpy(&disp, p + at + 2, sizeof disp);
  return addr + at + 6 + static_cast<int64_t>(disp);
}

// AArch64 PLT entries (binutils' small entries, with or without BTI and
// PAC): [bti c;] adrp x16, PAGE; ldr x17, [x16, #OFF]; add x16, x16, #OFF;
// [autia1716;] br x17 [; nop]. The GOT slot is PAGE + OFF. Each entry found
// as (start, size, slot); the PLT header's pair loads the resolver's slot,
// which no relocation names.
struct A64PltEntry {
  uint64_t start, size, slot;
};
std::vector<A64PltEntry> A64PltEntries(const uint8_t* p, size_t n, uint64_t addr) {
  constexpr uint32_t kBtiC = 0xd503245f, kNop = 0xd503201f, kBrX17 = 0xd61f0220;
  auto insn = [&](size_t off) {
    uint32_t v;
    std::memcpy(&v, p + off, 4);
    return v;
  };
  std::vector<A64PltEntry> out;
  for (size_t off = 0; off + 8 <= n; off += 4) {
    const uint32_t adrp = insn(off), ldr = insn(off + 4);
    // adrp x16 / ldr x17, [x16, #imm12 * 8] (64-bit unsigned offset form).
    if ((adrp & 0x9f00001f) != 0x90000010 || (ldr & 0xffc003ff) != 0xf9400211) continue;
    const uint64_t immlo = (adrp >> 29) & 3, immhi = (adrp >> 5) & 0x7ffff;
    int64_t page_delta = static_cast<int64_t>(((immhi << 2) | immlo) << 12);
    if (page_delta & (int64_t{1} << 32)) page_delta -= int64_t{1} << 33;  // 33-bit signed
    const uint64_t pc = addr + off;
    const uint64_t slot = (pc & ~uint64_t{0xfff}) + page_delta + ((ldr >> 10) & 0xfff) * 8;
    const size_t start = off >= 4 && insn(off - 4) == kBtiC ? off - 4 : off;
    size_t end = 0;
    for (size_t at = off + 8; at + 4 <= n && at <= off + 16; at += 4) {
      if (insn(at) == kBrX17) {
        end = at + 4;
        break;
      }
    }
    if (end == 0) continue;
    if (end + 4 <= n && insn(end) == kNop) end += 4;
    out.push_back({addr + start, end - start, slot});
    off = end - 4;
  }
  return out;
}

}  // namespace

absl::StatusOr<bool> AppendFunctionSymbols(const ElfFile& img, uint32_t sh_type,
                                           std::vector<RawSymbol>* out) {
  const ElfSectionHeader* symtab = nullptr;
  for (const ElfSectionHeader& s : img.headers()) {
    if (s.header.sh_type == sh_type) {
      symtab = &s;
      break;
    }
  }
  if (!symtab) return false;
  EHP_ASSIGN_OR_RETURN(size_t strndx, LinkedStrtab(img, *symtab));
  EHP_ASSIGN_OR_RETURN(Elf_Data * d, img.RawData(*symtab));
  EHP_ASSIGN_OR_RETURN(size_t n, EntryCount(img, *symtab, d, ELF_T_SYM));
  for (size_t i = 1; i < n; ++i) {
    GElf_Sym sym;
    if (!gelf_getsym(d, static_cast<int>(i), &sym)) {
      return img.Error(absl::StrCat("bad symbol ", i, " in ", std::string(symtab->name)));
    }
    int type = GELF_ST_TYPE(sym.st_info);
    if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_value == 0 ||
        sym.st_shndx == SHN_UNDEF) {
      continue;
    }
    const char* name = elf_strptr(img.elf(), strndx, sym.st_name);
    if (!name || !*name) continue;
    RawSymbol r;
    r.name = name;
    // "__libc_start_main@@GLIBC_2.34": a .symtab keeps the version; perf and
    // the dynamic symbol table show the plain name.
    if (size_t at = r.name.find('@'); at != std::string_view::npos && at > 0) r.name = r.name.substr(0, at);
    r.addr = sym.st_value;
    r.size = sym.st_size;
    r.rank = BindingRank(sym.st_info);
    const ElfSectionHeader* in =
        sym.st_shndx < SHN_LORESERVE ? img.HeaderAt(sym.st_shndx) : nullptr;
    if (in && (in->header.sh_flags & SHF_ALLOC) &&
        in->header.sh_addr <= r.addr && r.addr < in->end_addr()) {
      r.section_end = in->end_addr();
    }
    out->push_back(r);
  }
  return true;
}

absl::Status AppendPltSymbols(const ElfFile& img, std::vector<RawSymbol>* out,
                              std::deque<std::string>* names) {
  if (img.machine() != EM_X86_64 && img.machine() != EM_AARCH64) return absl::OkStatus();
  const ElfSectionHeader* plts[] = {img.FindHeader(".plt"), img.FindHeader(".plt.sec"),
                                img.FindHeader(".plt.got")};
  bool any = false;
  for (const ElfSectionHeader* s : plts) any = any || s;
  if (!any) return absl::OkStatus();
  EHP_ASSIGN_OR_RETURN(auto slots, GotSlotNames(img));
  if (slots.empty()) return absl::OkStatus();
  for (const ElfSectionHeader* s : plts) {
    if (!s || s->header.sh_type != SHT_PROGBITS || !(s->header.sh_flags & SHF_EXECINSTR)) {
      continue;
    }
    EHP_ASSIGN_OR_RETURN(Elf_Data * d, img.RawData(*s));
    if (!d->d_buf) continue;
    const auto* bytes = static_cast<const uint8_t*>(d->d_buf);
    if (img.machine() == EM_AARCH64) {
      for (const A64PltEntry& e : A64PltEntries(bytes, d->d_size, s->header.sh_addr)) {
        auto it = slots.find(e.slot);
        if (it == slots.end()) continue;
        names->push_back(absl::StrCat(it->second, "@plt"));
        out->push_back({names->back(), e.start, e.size, s->end_addr(), /*rank=*/0});
      }
      continue;
    }
    uint64_t entsize = s->header.sh_entsize;
    if (entsize != 8 && entsize != 16) entsize = 16;
    if (d->d_size / entsize > kMaxTableEntries) {
      return absl::ResourceExhaustedError(absl::StrCat(
          img.path(), ": section ", std::string(s->name), " holds ", d->d_size / entsize,
          " PLT entries, over the ", kMaxTableEntries, " a table may have: not read"));
    }
    for (uint64_t off = 0; off + entsize <= d->d_size; off += entsize) {
      uint64_t addr = s->header.sh_addr + off;
      auto slot = JumpSlot(bytes + off, entsize, addr);
      if (!slot) continue;
      auto it = slots.find(*slot);
      if (it == slots.end()) continue;
      names->push_back(absl::StrCat(it->second, "@plt"));
      out->push_back({names->back(), addr, entsize, s->end_addr(), /*rank=*/0});
    }
  }
  return absl::OkStatus();
}

}  // namespace ehprof::symbolizer_internal
