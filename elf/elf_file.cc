#include "elf/elf_file.h"

#include <elf.h>
#include <fcntl.h>
#include <gelf.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace ehprof {

absl::StatusOr<ElfFile> ElfFile::Open(const std::string& path, LinkPolicy links) {
  absl::StatusOr<UniqueFd> fd = OpenUntrustedFile(path, links);
  if (!fd.ok()) {
    return absl::NotFoundError(fd.status().message());
  }
  return FromFd(*std::move(fd), path);
}

absl::StatusOr<ElfFile> ElfFile::FromFd(UniqueFd fd, std::string path) {
  ElfFile f;
  f.path_ = std::move(path);
  f.fd_ = std::move(fd);
  elf_version(EV_CURRENT);
  // Mapped, not read: a truncation while this is read is survived
  // (base/sigbus_guard.h).
  f.elf_.reset(elf_begin(f.fd_.get(), ELF_C_READ_MMAP, nullptr));
  if (!f.elf_) return f.Error("not a readable ELF file");
  EHP_RETURN_IF_ERROR(f.Init());
  return f;
}

absl::StatusOr<ElfFile> ElfFile::FromBytes(std::string name,
                                           std::vector<uint8_t> bytes) {
  ElfFile f;
  f.path_ = std::move(name);
  f.owned_bytes_ = std::move(bytes);
  if (f.owned_bytes_.empty()) return f.Error("empty ELF image");
  elf_version(EV_CURRENT);
  // libelf does not write through this pointer in read mode.
  f.elf_.reset(elf_memory(reinterpret_cast<char*>(f.owned_bytes_.data()),
                          f.owned_bytes_.size()));
  if (!f.elf_) return f.Error("not a readable ELF image");
  EHP_RETURN_IF_ERROR(f.Init());
  return f;
}

absl::Status ElfFile::Error(std::string_view what) const {
  const int err = elf_errno();
  const std::string detail = err ? absl::StrCat(" (", elf_errmsg(err), ")") : "";
  return absl::InvalidArgumentError(absl::StrCat(path_, ": ", std::string(what), detail));
}

absl::Status ElfFile::Init() {
  Elf* e = elf_.get();
  if (elf_kind(e) != ELF_K_ELF) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": not an ELF file"));
  }
  size_t raw_size = 0;
  const char* raw = elf_rawfile(e, &raw_size);
  if (!raw) return Error("cannot map the file");
  image_ = {reinterpret_cast<const uint8_t*>(raw), raw_size};
  if (raw_size < EI_NIDENT || raw[EI_CLASS] != ELFCLASS64) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": not a 64-bit ELF file (only x86-64 and aarch64 are supported)"));
  }
  if (raw[EI_DATA] != ELFDATA2LSB) {
    return absl::InvalidArgumentError(
        absl::StrCat(path_, ": big-endian ELF (only x86-64 and aarch64 are supported)"));
  }
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(e, &ehdr)) return Error("bad ELF header");
  const std::optional<Arch> arch = ArchOfMachine(ehdr.e_machine);
  if (!arch) {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": machine ", ehdr.e_machine, " is neither x86-64 nor aarch64"));
  }
  arch_ = *arch;
  machine_ = ehdr.e_machine;
  entry_ = ehdr.e_entry;
  // libelf reports zero headers when their table runs past the end of the
  // file; that is a truncated file, not one without CFI.
  auto table_fits = [&](uint64_t off, uint64_t num, uint64_t entsize) {
    return num == 0 || (off <= raw_size && num * entsize <= raw_size - off);
  };
  if (!table_fits(ehdr.e_phoff, ehdr.e_phnum, ehdr.e_phentsize) ||
      !table_fits(ehdr.e_shoff, ehdr.e_shnum, ehdr.e_shentsize)) {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": truncated ELF file (program or section headers past its end)"));
  }
  size_t phnum = 0;
  if (elf_getphdrnum(e, &phnum) != 0) phnum = 0;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (!gelf_getphdr(e, static_cast<int>(i), &ph)) {
      return Error(absl::StrCat("bad program header ", i));
    }
    segments_.push_back({ph.p_type, ph.p_flags, ph.p_offset, ph.p_vaddr,
                         ph.p_filesz, ph.p_memsz});
  }
  return ReadHeaders(ehdr);
}

absl::Status ElfFile::ReadHeaders(const GElf_Ehdr& ehdr) {
  Elf* e = elf_.get();
  size_t shnum = 0;
  if (elf_getshdrnum(e, &shnum) != 0) return Error("bad section header count");
  if (shnum == 0) {
    // libelf quietly drops a section header table that lies past the end of
    // the file (truncated or corrupt); only its absence is legitimate.
    if (ehdr.e_shoff != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          path_, ": section headers at offset ", ehdr.e_shoff, " are outside the file"));
    }
    return absl::OkStatus();
  }
  // Without a readable name table the sections are still there, found by
  // type (symbol tables) but not by name (CFI).
  size_t shstrndx = 0;
  const bool named = elf_getshdrstrndx(e, &shstrndx) == 0 && shstrndx != 0;
  for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
    ElfSectionHeader s;
    s.scn = scn;
    s.index = elf_ndxscn(scn);
    if (!gelf_getshdr(scn, &s.header)) {
      return Error(absl::StrCat("bad section header ", s.index));
    }
    const char* n = named ? elf_strptr(e, shstrndx, s.header.sh_name) : nullptr;
    s.name = n ? n : "";
    headers_.push_back(s);
  }
  return absl::OkStatus();
}

const ElfSectionHeader* ElfFile::FindHeader(std::string_view name) const {
  for (const ElfSectionHeader& s : headers_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const ElfSectionHeader* ElfFile::HeaderAt(size_t index) const {
  // elf_nextscn starts at index 1 and goes up by one.
  if (index == 0 || index > headers_.size()) return nullptr;
  const ElfSectionHeader& s = headers_[index - 1];
  return s.index == index ? &s : nullptr;
}

absl::StatusOr<Elf_Data*> ElfFile::RawData(const ElfSectionHeader& s) const {
  if (s.header.sh_flags & SHF_COMPRESSED) {
    return absl::InvalidArgumentError(absl::StrCat(
        path_, ": section ", std::string(s.name), " [", s.index, "] is compressed; not read"));
  }
  Elf_Data* d = elf_getdata(s.scn, nullptr);
  if (!d) return Error(absl::StrCat("cannot read section ", std::string(s.name), " [", s.index, "]"));
  return d;
}

absl::StatusOr<std::optional<ElfSection>> ElfFile::Section(
    std::string_view name) const {
  const ElfSectionHeader* h = name.empty() ? nullptr : FindHeader(name);
  if (!h) return std::nullopt;
  // Read again: a section decompressed by an earlier call has a new header.
  GElf_Shdr sh;
  if (!gelf_getshdr(h->scn, &sh)) return Error(absl::StrCat("bad section header ", h->index));
  ElfSection s;
  s.name = h->name;
  s.addr = sh.sh_addr;
  s.size = sh.sh_size;
  s.type = sh.sh_type;
  if (sh.sh_type == SHT_NOBITS || sh.sh_size == 0) return s;
  if (sh.sh_flags & SHF_COMPRESSED) {
    // The header says what it expands to, and libelf allocates that
    // much: checked first.
    GElf_Chdr chdr;
    if (!gelf_getchdr(h->scn, &chdr)) {
      return Error(absl::StrCat("bad compression header in section ", std::string(name)));
    }
    if (chdr.ch_size > kMaxExpandedSectionBytes) {
      return absl::ResourceExhaustedError(absl::StrCat(
          path_, ": section ", std::string(name), " not read: it expands to ", chdr.ch_size,
          " bytes, over the ", kMaxExpandedSectionBytes, " a section may take"));
    }
    // Decompresses in libelf-owned memory, which lives as long as elf_.
    if (elf_compress(h->scn, 0, 0) < 0) {
      return Error(absl::StrCat("cannot decompress section ", std::string(name)));
    }
  }
  Elf_Data* d = elf_getdata(h->scn, nullptr);
  if (!d) return Error(absl::StrCat("cannot read section ", std::string(name)));
  if (d->d_buf && d->d_size) {
    s.data = {static_cast<const uint8_t*>(d->d_buf), d->d_size};
  }
  s.size = s.data.size();
  return s;
}

std::optional<std::span<const uint8_t>> ElfFile::BytesAtVaddr(
    uint64_t vaddr, uint64_t size) const {
  for (const ElfSegment& s : segments_) {
    if (s.type != PT_LOAD || vaddr < s.vaddr) continue;
    uint64_t rel = vaddr - s.vaddr;
    if (rel > s.filesz || size > s.filesz - rel) continue;
    uint64_t off = s.offset + rel;
    if (off > image_.size() || size > image_.size() - off) return std::nullopt;
    return image_.subspan(off, size);
  }
  return std::nullopt;
}

void ElfFile::DropResidentPages() const {
  if (!owned_bytes_.empty() || image_.empty()) return;
  // libelf maps the file PROT_READ (ELF_C_READ_MMAP): whole pages inside it.
  const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(image_.data()) + page - 1) / page * page;
  const uintptr_t end = (reinterpret_cast<uintptr_t>(image_.data()) + image_.size()) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

std::string ElfFile::BuildId() const {
  Elf* e = elf_.get();
  for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (!d || !d->d_buf) continue;
    size_t off = 0, name_off = 0, desc_off = 0;
    GElf_Nhdr nh;
    while ((off = gelf_getnote(d, off, &nh, &name_off, &desc_off)) > 0) {
      if (nh.n_type != NT_GNU_BUILD_ID || nh.n_namesz != 4 ||
          std::memcmp(static_cast<char*>(d->d_buf) + name_off, "GNU", 4) != 0) {
        continue;
      }
      static constexpr char kHex[] = "0123456789abcdef";
      const auto* p = static_cast<const uint8_t*>(d->d_buf) + desc_off;
      std::string hex;
      for (size_t i = 0; i < nh.n_descsz; ++i) {
        hex += kHex[p[i] >> 4];
        hex += kHex[p[i] & 15];
      }
      return hex;
    }
  }
  return "";
}

std::optional<std::string> ElfFile::DebugLink() const {
  auto s = Section(".gnu_debuglink");
  if (!s.ok() || !*s || (*s)->data.empty()) return std::nullopt;
  auto data = (*s)->data;
  const void* nul = std::memchr(data.data(), 0, data.size());
  if (!nul || nul == data.data()) return std::nullopt;
  return std::string(reinterpret_cast<const char*>(data.data()),
                     static_cast<const uint8_t*>(nul) - data.data());
}

}  // namespace ehprof
