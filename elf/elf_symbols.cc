#include "elf/elf_symbols.h"

#include <elf.h>

#include <cstring>
#include <span>

namespace ehprof {

void ForEachDefinedSymbol(const ElfFile& elf, std::string_view table, std::string_view strings,
                          absl::FunctionRef<void(const ElfSymbol&)> fn) {
  auto syms = elf.Section(table);
  auto strs = elf.Section(strings);
  if (!syms.ok() || !*syms || !strs.ok() || !*strs) return;
  std::span<const uint8_t> s = (*syms)->data, str = (*strs)->data;
  for (size_t at = 0; at + sizeof(Elf64_Sym) <= s.size(); at += sizeof(Elf64_Sym)) {
    Elf64_Sym sym;
    std::memcpy(&sym, s.data() + at, sizeof(sym));
    if (sym.st_shndx == SHN_UNDEF || sym.st_name >= str.size()) continue;
    const char* p = reinterpret_cast<const char*>(str.data()) + sym.st_name;
    ElfSymbol out;
    out.name = std::string_view(p, strnlen(p, str.size() - sym.st_name));
    out.value = sym.st_value;
    out.size = sym.st_size;
    out.index = static_cast<uint32_t>(at / sizeof(Elf64_Sym));
    out.type = ELF64_ST_TYPE(sym.st_info);
    fn(out);
  }
}

std::optional<TlsGotPair> FindTlsGotPair(const ElfFile& elf, const ElfSymbol& sym) {
  auto rela = elf.Section(".rela.dyn");
  if (!rela.ok() || !*rela) return std::nullopt;
  std::span<const uint8_t> d = (*rela)->data;
  TlsGotPair out;
  bool mod = false, off = false;
  for (size_t at = 0; at + sizeof(Elf64_Rela) <= d.size(); at += sizeof(Elf64_Rela)) {
    Elf64_Rela r;
    std::memcpy(&r, d.data() + at, sizeof(r));
    if (ELF64_R_SYM(r.r_info) != sym.index) continue;
    if (ELF64_R_TYPE(r.r_info) == R_X86_64_DTPMOD64) out.modid_slot = r.r_offset, mod = true;
    if (ELF64_R_TYPE(r.r_info) == R_X86_64_DTPOFF64) out.offset = static_cast<int64_t>(sym.value) + r.r_addend, off = true;
  }
  if (!mod || !off) return std::nullopt;
  return out;
}

}  // namespace ehprof
