#include "symbolizer/elf_symbols.h"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "elf/elf_file.h"
#include "symbolizer/elf_symbol_reader.h"
#include "symbolizer/xz_decompress.h"
#include "base/status_macros.h"

namespace ehprof {

using symbolizer_internal::AppendFunctionSymbols;
using symbolizer_internal::AppendPltSymbols;
using symbolizer_internal::RawSymbol;

class ElfSymbolsBuilder {
 public:
  static absl::StatusOr<std::shared_ptr<const ElfSymbols>> Build(const ElfFile& img) {
    std::vector<RawSymbol> syms;
    EHP_ASSIGN_OR_RETURN(bool has_symtab, AppendFunctionSymbols(img, SHT_SYMTAB, &syms));
    const uint32_t table = has_symtab ? SHT_SYMTAB : SHT_DYNSYM;
    if (!has_symtab) {
      EHP_RETURN_IF_ERROR(AppendFunctionSymbols(img, SHT_DYNSYM, &syms).status());
    }
    std::deque<std::string> names;  // the names RawSymbols point to that no image holds
    EHP_RETURN_IF_ERROR(AppendPltSymbols(img, &syms, &names));
    std::optional<ElfFile> mini_image;  // MiniDebugInfo's names point into it
    EHP_ASSIGN_OR_RETURN(bool mini, AppendMiniDebugInfo(img, &syms, &mini_image));
    auto built = std::shared_ptr<ElfSymbols>(new ElfSymbols());
    StringTable strtab = MapStringTable(img, table, &built->strtab_);
    EHP_RETURN_IF_ERROR(Index(std::move(syms), mini, img.path(), strtab, built.get()));
    return std::shared_ptr<const ElfSymbols>(std::move(built));
  }

 private:
  // MiniDebugInfo's .symtab holds exactly the function symbols that
  // stripping removed and .dynsym lacks (Fedora, systemd, Android ship it).
  // Where the symbol table's names are in libelf's view of the image, and
  // the same bytes mapped from the file (kept by the table).
  struct StringTable {
    const char* in_image = nullptr;
    uint64_t size = 0;
  };
  static StringTable MapStringTable(const ElfFile& img, uint32_t sh_type, MappedRange* mapped) {
    if (img.fd() < 0) return {};
    for (const auto& s : img.headers()) {
      if (s.header.sh_type != sh_type) continue;
      const auto* str = img.HeaderAt(s.header.sh_link);
      if (!str || str->header.sh_type != SHT_STRTAB || (str->header.sh_flags & SHF_COMPRESSED)) return {};
      auto d = img.RawData(*str);
      if (!d.ok() || !(*d)->d_buf || (*d)->d_size != str->header.sh_size) return {};
      *mapped = MappedRange(img.fd(), str->header.sh_offset, str->header.sh_size);
      // The same bytes as libelf's (their ends only: comparing all would
      // make every page resident).
      const uint64_t n = std::min<uint64_t>(64, mapped->size());
      const char* in_image = static_cast<const char*>((*d)->d_buf);
      if (!mapped->data() || std::memcmp(mapped->data(), in_image, n) != 0 ||
          std::memcmp(mapped->data() + mapped->size() - n, in_image + mapped->size() - n, n) != 0) {
        *mapped = MappedRange();
        return {};
      }
      return {in_image, str->header.sh_size};
    }
    return {};
  }

  static absl::StatusOr<bool> AppendMiniDebugInfo(const ElfFile& img, std::vector<RawSymbol>* out,
                                                  std::optional<ElfFile>* keep) {
    const auto* s = img.FindHeader(".gnu_debugdata");
    if (!s || s->header.sh_type != SHT_PROGBITS) return false;
    EHP_ASSIGN_OR_RETURN(Elf_Data * d, img.RawData(*s));
    if (!d->d_buf || d->d_size == 0) return false;
    std::string name = absl::StrCat(img.path(), " [.gnu_debugdata]");
    EHP_ASSIGN_OR_RETURN(
        std::vector<uint8_t> bytes,
        XzDecompress(name, {static_cast<const uint8_t*>(d->d_buf), d->d_size}));
    EHP_ASSIGN_OR_RETURN(ElfFile mini, ElfFile::FromBytes(name, std::move(bytes)));
    keep->emplace(std::move(mini));
    EHP_RETURN_IF_ERROR(AppendFunctionSymbols(**keep, SHT_SYMTAB, out).status());
    return true;
  }

  static absl::Status Index(std::vector<RawSymbol> syms, bool mini, const std::string& name,
                            const StringTable& strtab, ElfSymbols* table) {
    // Within one address the preferred name comes first: global over weak
    // over local (the exported name over internal aliases), then fewer
    // leading underscores (malloc over __libc_malloc, clone3 over
    // __GI___clone3), then the longer name (perf's tie-breaks, in perf's
    // order), then by name so the choice is stable.
    auto underscores = [](std::string_view n) { return n.find_first_not_of('_'); };
    std::sort(syms.begin(), syms.end(), [&](const RawSymbol& a, const RawSymbol& b) {
      if (a.addr != b.addr) return a.addr < b.addr;
      if (a.rank != b.rank) return a.rank > b.rank;
      if (underscores(a.name) != underscores(b.name)) return underscores(a.name) < underscores(b.name);
      if (a.name.size() != b.name.size()) return a.name.size() > b.name.size();
      return a.name < b.name;
    });
    table->has_mini_debug_info_ = mini;
    std::vector<uint64_t> sizes, section_ends;
    for (size_t i = 0; i < syms.size();) {
      const RawSymbol& best = syms[i];
      uint64_t size = 0, section_end = 0;
      size_t j = i;
      // Aliases share one extent: the largest any of them declares.
      for (; j < syms.size() && syms[j].addr == best.addr; ++j) {
        size = std::max(size, syms[j].size);
        section_end = std::max(section_end, syms[j].section_end);
      }
      if (table->names_.size() + best.name.size() >= ElfSymbols::kMapped) {
        return absl::ResourceExhaustedError(
            absl::StrCat(name, ": symbol names exceed 2 GiB"));
      }
      const size_t in_strtab = static_cast<size_t>(best.name.data() - strtab.in_image);
      if (strtab.in_image != nullptr && best.name.data() >= strtab.in_image &&
          in_strtab + best.name.size() <= strtab.size) {
        table->entries_.push_back({best.addr, 0, static_cast<uint32_t>(in_strtab),
                                   static_cast<uint32_t>(best.name.size()) | ElfSymbols::kMapped,
                                   ElfSymbols::kNoParent});
      } else {
        table->entries_.push_back({best.addr, 0, static_cast<uint32_t>(table->names_.size()),
                                   static_cast<uint32_t>(best.name.size()), ElfSymbols::kNoParent});
        table->names_ += best.name;
      }
      sizes.push_back(size);
      section_ends.push_back(section_end);
      i = j;
    }
    if (table->entries_.size() >= ElfSymbols::kNoParent) {
      return absl::ResourceExhaustedError(absl::StrCat(name, ": too many symbols"));
    }
    auto& entries = table->entries_;
    entries.shrink_to_fit();
    table->names_.shrink_to_fit();
    std::vector<uint32_t> open;  // entries whose extent may still cover later ones
    for (size_t i = 0; i < entries.size(); ++i) {
      ElfSymbols::Entry& e = entries[i];
      uint64_t end;
      if (sizes[i] > 0) {
        end = e.start + std::min(sizes[i], UINT64_MAX - e.start);
      } else {
        end = i + 1 < entries.size() ? entries[i + 1].start : UINT64_MAX;
        if (section_ends[i] > e.start) end = std::min(end, section_ends[i]);
        // Neither a next symbol nor a section to stop at: only its address.
        if (end == UINT64_MAX) end = e.start + 1;
      }
      e.size = static_cast<uint32_t>(std::min<uint64_t>(end - e.start, UINT32_MAX));
      while (!open.empty() && entries[open.back()].end() <= e.start) open.pop_back();
      if (!open.empty()) e.parent = open.back();
      open.push_back(static_cast<uint32_t>(i));
    }
    return absl::OkStatus();
  }
};

absl::StatusOr<std::shared_ptr<const ElfSymbols>> ElfSymbols::Load(const std::string& path) {
  EHP_ASSIGN_OR_RETURN(ElfFile img, ElfFile::Open(path));
  return ElfSymbolsBuilder::Build(img);
}

absl::StatusOr<std::shared_ptr<const ElfSymbols>> ElfSymbols::FromFd(UniqueFd fd,
                                                                    std::string path) {
  EHP_ASSIGN_OR_RETURN(ElfFile img, ElfFile::FromFd(std::move(fd), std::move(path)));
  return ElfSymbolsBuilder::Build(img);
}

absl::StatusOr<std::shared_ptr<const ElfSymbols>> ElfSymbols::FromBytes(
    std::string name, std::vector<uint8_t> bytes) {
  EHP_ASSIGN_OR_RETURN(ElfFile img, ElfFile::FromBytes(std::move(name), std::move(bytes)));
  return ElfSymbolsBuilder::Build(img);
}

absl::StatusOr<std::shared_ptr<const ElfSymbols>> ElfSymbols::FromElf(const ElfFile& elf) {
  return ElfSymbolsBuilder::Build(elf);
}

bool ElfSymbols::Covers(uint64_t begin, uint64_t end) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), begin,
                             [](uint64_t a, const Entry& e) { return a < e.start; });
  if (it == entries_.begin()) return false;
  // The entries holding `begin` are the nearest start's parent chain.
  for (uint32_t i = static_cast<uint32_t>(it - entries_.begin() - 1); i != kNoParent; i = entries_[i].parent) {
    if (begin < entries_[i].end() && end <= entries_[i].end()) return true;
  }
  return false;
}

std::optional<ElfSymbol> ElfSymbols::Find(uint64_t vaddr) const {
  auto it = std::upper_bound(entries_.begin(), entries_.end(), vaddr,
                             [](uint64_t a, const Entry& e) { return a < e.start; });
  if (it == entries_.begin()) return std::nullopt;
  uint32_t i = static_cast<uint32_t>(it - entries_.begin() - 1);
  // The nearest start may be a nested symbol that ends before vaddr; its
  // enclosing symbols are the parent chain.
  while (i != kNoParent && vaddr >= entries_[i].end()) i = entries_[i].parent;
  if (i == kNoParent) return std::nullopt;
  const Entry& e = entries_[i];
  const uint32_t n = e.name_size & ~kMapped;
  std::string name = (e.name_size & kMapped) ? std::string(strtab_.data() + e.name_offset, n)
                                              : names_.substr(e.name_offset, n);
  return ElfSymbol{std::move(name), e.start, e.size};
}

}  // namespace ehprof
