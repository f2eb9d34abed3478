#include "agent/v8/v8_binary.h"

#include <elf.h>

#include <cstring>
#include <string_view>

#include "absl/strings/str_cat.h"

namespace ehprof {

namespace {

constexpr std::string_view kPrefix = "v8dbg_";
// More than any V8 release has (node 20: 531): a table claiming more is not
// metadata ehprof reads.
constexpr size_t kMaxMetadata = 4096;

absl::Status ReadMetadataSymbols(const ElfFile& elf, std::string_view table, std::string_view strings,
                                 V8Binary* out) {
  auto syms = elf.Section(table);
  auto strs = elf.Section(strings);
  if (!syms.ok()) return syms.status();
  if (!strs.ok()) return strs.status();
  if (!*syms || !*strs) return absl::OkStatus();
  std::span<const uint8_t> s = (*syms)->data, str = (*strs)->data;
  for (size_t at = 0; at + sizeof(Elf64_Sym) <= s.size(); at += sizeof(Elf64_Sym)) {
    Elf64_Sym sym;
    std::memcpy(&sym, s.data() + at, sizeof(sym));
    if (sym.st_shndx == SHN_UNDEF || sym.st_value == 0 || sym.st_name >= str.size() ||
        ELF64_ST_TYPE(sym.st_info) != STT_OBJECT || sym.st_size < 4) {
      continue;
    }
    const char* p = reinterpret_cast<const char*>(str.data()) + sym.st_name;
    std::string_view name(p, strnlen(p, str.size() - sym.st_name));
    if (name.substr(0, kPrefix.size()) != kPrefix) continue;
    if (out->metadata.size() >= kMaxMetadata) {
      return absl::InvalidArgumentError(absl::StrCat(elf.path(), ": more than ", kMaxMetadata, " v8dbg symbols"));
    }
    out->metadata.emplace(std::string(name.substr(kPrefix.size())), sym.st_value);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::optional<V8Binary>> InspectV8Binary(const ElfFile& elf, const std::string& path) {
  V8Binary b;
  b.path = path;
  if (absl::Status st = ReadMetadataSymbols(elf, ".symtab", ".strtab", &b); !st.ok()) return st;
  if (absl::Status st = ReadMetadataSymbols(elf, ".dynsym", ".dynstr", &b); !st.ok()) return st;
  if (!b.metadata.contains("off_fp_function")) return std::nullopt;
  for (const ElfSegment& seg : elf.segments()) {
    if (seg.type == PT_LOAD) b.loads.push_back(seg);
  }
  return b;
}

}  // namespace ehprof
