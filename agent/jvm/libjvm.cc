#include "agent/jvm/libjvm.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace ehprof {

absl::StatusOr<LibjvmFile> InspectLibjvm(const ElfFile& elf) {
  LibjvmFile out;
  for (const ElfSegment& s : elf.segments()) {
    if (s.type == PT_LOAD) out.loads.push_back(s);
  }
  auto syms = elf.Section(".dynsym");
  auto strs = elf.Section(".dynstr");
  if (!syms.ok()) return syms.status();
  if (!strs.ok()) return strs.status();
  if (!*syms || !*strs) return absl::NotFoundError(absl::StrCat(elf.path(), ": no .dynsym"));
  std::span<const uint8_t> table = (*syms)->data, names = (*strs)->data;
  for (size_t at = 0; at + sizeof(Elf64_Sym) <= table.size(); at += sizeof(Elf64_Sym)) {
    Elf64_Sym sym;
    std::memcpy(&sym, table.data() + at, sizeof(sym));
    if (sym.st_shndx == SHN_UNDEF || sym.st_name >= names.size()) continue;
    const char* p = reinterpret_cast<const char*>(names.data()) + sym.st_name;
    const std::string name(p, strnlen(p, names.size() - sym.st_name));
    if (absl::StartsWith(name, "gHotSpotVM")) out.symbols.insert_or_assign(name, sym.st_value);
  }
  if (out.symbols.empty()) {
    return absl::NotFoundError(absl::StrCat(elf.path(), ": exports no gHotSpotVM* symbol"));
  }
  return out;
}

std::optional<MapsEntry> FindLibjvmMapping(const std::vector<MapsEntry>& maps) {
  for (const MapsEntry& e : maps) {
    if (e.exec && !e.path.empty() && e.path[0] == '/' && absl::EndsWith(e.path, "/libjvm.so")) return e;
  }
  return std::nullopt;
}

std::optional<uint64_t> LoadBias(const std::vector<ElfSegment>& loads, const MapsEntry& e) {
  for (const ElfSegment& seg : loads) {
    const uint64_t page_offset = seg.offset & ~uint64_t{4095};
    if (e.offset >= page_offset && e.offset < seg.offset + seg.filesz) {
      return e.start - (e.offset - page_offset) - (seg.vaddr & ~uint64_t{4095});
    }
  }
  return std::nullopt;
}

VmSymbols RuntimeSymbols(const LibjvmFile& file, uint64_t bias) {
  VmSymbols out;
  for (const auto& [name, addr] : file.symbols) out.emplace(name, addr + bias);
  return out;
}

}  // namespace ehprof
