#include "symbolizer/elf_image.h"


#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "base/untrusted_file.h"

namespace ehprof::symbolizer_internal {

absl::StatusOr<ElfImage> ElfImage::Open(const std::string& path) {
  absl::StatusOr<UniqueFd> fd = OpenUntrustedFile(path, LinkPolicy::kFollow);
  if (!fd.ok()) return absl::NotFoundError(fd.status().message());
  return FromFd(*std::move(fd), path);
}

absl::StatusOr<ElfImage> ElfImage::FromFd(UniqueFd fd, std::string path) {
  ElfImage img;
  img.name_ = std::move(path);
  img.fd_ = std::move(fd);
  elf_version(EV_CURRENT);
  // Mapped, not read: a truncation while this is read is survived
  // (base/sigbus_guard.h).
  img.elf_.reset(elf_begin(img.fd_.get(), ELF_C_READ_MMAP, nullptr));
  if (!img.elf_) return img.Error("not a readable ELF file");
  EHP_RETURN_IF_ERROR(img.Init());
  return img;
}

absl::StatusOr<ElfImage> ElfImage::FromBytes(std::string name,
                                             std::vector<uint8_t> bytes) {
  ElfImage img;
  img.name_ = std::move(name);
  img.bytes_ = std::move(bytes);
  if (img.bytes_.empty()) return img.Error("empty ELF image");
  elf_version(EV_CURRENT);
  // libelf does not write through this pointer in read mode.
  img.elf_.reset(elf_memory(reinterpret_cast<char*>(img.bytes_.data()),
                            img.bytes_.size()));
  if (!img.elf_) return img.Error("not a readable ELF image");
  EHP_RETURN_IF_ERROR(img.Init());
  return img;
}

absl::Status ElfImage::Error(std::string_view what) const {
  int err = elf_errno();
  std::string detail = err ? absl::StrCat(" (", elf_errmsg(err), ")") : "";
  return absl::InvalidArgumentError(
      absl::StrCat(name_, ": ", std::string(what), detail));
}

absl::Status ElfImage::Init() {
  Elf* e = elf_.get();
  if (elf_kind(e) != ELF_K_ELF) {
    return absl::InvalidArgumentError(absl::StrCat(name_, ": not an ELF file"));
  }
  GElf_Ehdr ehdr;
  if (!gelf_getehdr(e, &ehdr)) return Error("bad ELF header");
  machine_ = ehdr.e_machine;

  size_t shnum = 0;
  if (elf_getshdrnum(e, &shnum) != 0) return Error("bad section header count");
  if (shnum == 0) {
    // libelf quietly drops a section header table that lies past the end of
    // the file (truncated or corrupt); only its absence is legitimate.
    if (ehdr.e_shoff != 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          name_, ": section headers at offset ", ehdr.e_shoff, " are outside the file"));
    }
    return absl::OkStatus();  // no sections: no symbols
  }
  size_t shstrndx = 0;
  if (elf_getshdrstrndx(e, &shstrndx) != 0) {
    return Error("bad section name table index");
  }
  for (Elf_Scn* scn = elf_nextscn(e, nullptr); scn; scn = elf_nextscn(e, scn)) {
    ImageSection s;
    s.scn = scn;
    s.index = elf_ndxscn(scn);
    if (!gelf_getshdr(scn, &s.header)) {
      return Error(absl::StrCat("bad section header ", s.index));
    }
    // A name that cannot be read only makes the section unfindable by name.
    const char* n = elf_strptr(e, shstrndx, s.header.sh_name);
    s.name = n ? n : "";
    sections_.push_back(s);
  }
  return absl::OkStatus();
}

const ImageSection* ElfImage::FindSection(std::string_view name) const {
  for (const ImageSection& s : sections_) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

const ImageSection* ElfImage::SectionAt(size_t index) const {
  // elf_nextscn starts at index 1 and goes up by one.
  if (index == 0 || index > sections_.size()) return nullptr;
  const ImageSection& s = sections_[index - 1];
  return s.index == index ? &s : nullptr;
}

absl::StatusOr<Elf_Data*> ElfImage::Data(const ImageSection& s) const {
  if (s.header.sh_flags & SHF_COMPRESSED) {
    return absl::InvalidArgumentError(absl::StrCat(
        name_, ": section ", std::string(s.name), " [", s.index, "] is compressed; not read"));
  }
  Elf_Data* d = elf_getdata(s.scn, nullptr);
  if (!d) {
    return Error(absl::StrCat("cannot read section ", std::string(s.name),
                              " [", s.index, "]"));
  }
  return d;
}

}  // namespace ehprof::symbolizer_internal
