// One ELF image opened with libelf for symbol reading, from a file or from
// bytes it owns (an embedded MiniDebugInfo image). Files are untrusted:
// section headers are read and checked once here, and every error names
// the image.
#ifndef EHPROF_SYMBOLIZER_ELF_IMAGE_H_
#define EHPROF_SYMBOLIZER_ELF_IMAGE_H_

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "unwind_tables/elf_file.h"
#include "base/unique_fd.h"

namespace ehprof::symbolizer_internal {

struct ImageSection {
  size_t index = 0;
  std::string_view name;  // points into libelf memory owned by the image
  GElf_Shdr header{};
  Elf_Scn* scn = nullptr;

  uint64_t end_addr() const { return header.sh_addr + header.sh_size; }
};

class ElfImage {
 public:
  // OpenUntrustedFile(path, kFollow) (a regular file of a sane size, the
  // kernel's /proc/self/fd links followed), then FromFd.
  static absl::StatusOr<ElfImage> Open(const std::string& path);
  // An fd already opened and checked; `path` names it in messages.
  static absl::StatusOr<ElfImage> FromFd(UniqueFd fd, std::string path);
  // `name` is used in messages (e.g. "/usr/bin/x [.gnu_debugdata]").
  static absl::StatusOr<ElfImage> FromBytes(std::string name,
                                            std::vector<uint8_t> bytes);

  // Move-construction only: libelf points into fd_/bytes_, so assignment
  // (which would free them before elf_) is not worth getting right.
  ElfImage(ElfImage&&) = default;
  ElfImage& operator=(ElfImage&&) = delete;

  const std::string& name() const { return name_; }
  Elf* elf() const { return elf_.get(); }
  // The file it was opened from; -1 for an in-memory image.
  int fd() const { return fd_.valid() ? fd_.get() : -1; }
  uint16_t machine() const { return machine_; }
  const std::vector<ImageSection>& sections() const { return sections_; }

  // The first section called `name`, if any.
  const ImageSection* FindSection(std::string_view name) const;
  // The section with header index `index`, if it exists.
  const ImageSection* SectionAt(size_t index) const;
  // The contents of `s` (empty for SHT_NOBITS); an error when libelf cannot
  // read them (e.g. they lie past the end of the file) or they are
  // compressed (no symbol, string or PLT section is: those bytes would be
  // read as what they are not).
  absl::StatusOr<Elf_Data*> Data(const ImageSection& s) const;

  absl::Status Error(std::string_view what) const;

 private:
  ElfImage() = default;
  absl::Status Init();

  std::string name_;
  // Declared before elf_ so they outlive it.
  std::vector<uint8_t> bytes_;
  UniqueFd fd_;
  ElfPtr elf_;
  uint16_t machine_ = 0;
  std::vector<ImageSection> sections_;
};

}  // namespace ehprof::symbolizer_internal

#endif  // EHPROF_SYMBOLIZER_ELF_IMAGE_H_
