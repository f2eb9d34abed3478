// Read-only access to one 64-bit little-endian x86-64 or AArch64 ELF file
// via libelf: the one ELF reader of both pipelines (unwind tables read its
// CFI sections and segments, the symbolizer its symbol tables).
//
// Everything returned points into memory owned by the ElfFile, which must
// outlive it. Files are untrusted: every header and section is validated by
// libelf or here before use, and errors name the file and what was wrong.
#ifndef EHPROF_ELF_ELF_FILE_H_
#define EHPROF_ELF_ELF_FILE_H_

#include <gelf.h>
#include <libelf.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "base/scoped_handle.h"
#include "base/unique_fd.h"
#include "base/untrusted_file.h"
#include "elf/arch.h"

namespace ehprof {

struct ElfSection {
  std::string_view name;
  uint64_t addr = 0;  // sh_addr: where the section is mapped (0 if not)
  uint64_t size = 0;
  uint32_t type = 0;  // SHT_*
  std::span<const uint8_t> data;  // empty for SHT_NOBITS
};

struct ElfSegment {
  uint32_t type = 0;  // PT_*
  uint32_t flags = 0; // PF_*
  uint64_t offset = 0;
  uint64_t vaddr = 0;
  uint64_t filesz = 0;
  uint64_t memsz = 0;
};

// One section header as read at open, for readers that walk sections by
// type and link (symbol, string and relocation tables).
struct ElfSectionHeader {
  size_t index = 0;
  std::string_view name;  // points into libelf memory owned by the file
  GElf_Shdr header{};
  Elf_Scn* scn = nullptr;

  uint64_t end_addr() const { return header.sh_addr + header.sh_size; }
};

using ElfPtr = ScopedHandle<Elf, elf_end>;

// The most a compressed (SHF_COMPRESSED) section may expand to here. The
// sections read this way are CFI and notes: the largest real .debug_frame
// is a few MB (libLLVM's whole .eh_frame is 5 MB), while a 0.5 MB zlib
// section can claim, and really expand to, 500 MB.
inline constexpr uint64_t kMaxExpandedSectionBytes = uint64_t{64} << 20;

class ElfFile {
 public:
  // Opens `path` (OpenUntrustedFile: only a regular file of a sane size,
  // never blocking; `links` as there: the default follows, for the kernel's
  // /proc/self/fd and map_files links); fails for non-ELF, 32-bit,
  // big-endian files and machines other than x86-64 and AArch64.
  static absl::StatusOr<ElfFile> Open(const std::string& path,
                                      LinkPolicy links = LinkPolicy::kFollow);
  // The same from an fd already opened and checked (OpenUntrustedFile);
  // `path` names it in messages.
  static absl::StatusOr<ElfFile> FromFd(UniqueFd fd, std::string path);
  // Parses an in-memory image (a vDSO copy, an embedded MiniDebugInfo
  // image, a fuzzer input). `name` is used in messages.
  static absl::StatusOr<ElfFile> FromBytes(std::string name,
                                           std::vector<uint8_t> bytes);

  // Moves keep every pointer handed out valid: libelf's memory, the
  // mapping and owned_bytes_' buffer stay where they are.
  ElfFile(ElfFile&&) = default;
  ElfFile& operator=(ElfFile&&) = default;

  const std::string& path() const { return path_; }
  Elf* elf() const { return elf_.get(); }
  uint16_t machine() const { return machine_; }  // e_machine
  // The file it was opened from; -1 for an in-memory image.
  int fd() const { return fd_.valid() ? fd_.get() : -1; }
  uint64_t entry() const { return entry_; }         // e_entry
  Arch arch() const { return arch_; }

  // The named section; nullopt when absent. Compressed (SHF_COMPRESSED)
  // sections are returned decompressed; an error when they cannot be or
  // would expand past kMaxExpandedSectionBytes.
  absl::StatusOr<std::optional<ElfSection>> Section(std::string_view name) const;
  const std::vector<ElfSegment>& segments() const { return segments_; }

  // Every section header, in index order.
  const std::vector<ElfSectionHeader>& headers() const { return headers_; }
  // The first section header called `name`, if any.
  const ElfSectionHeader* FindHeader(std::string_view name) const;
  // The section header with index `index`, if it exists.
  const ElfSectionHeader* HeaderAt(size_t index) const;
  // The contents of `s` as stored (empty for SHT_NOBITS); an error when
  // libelf cannot read them (e.g. they lie past the end of the file) or
  // they are compressed (no symbol, string or PLT section is: those bytes
  // would be read as what they are not).
  absl::StatusOr<Elf_Data*> RawData(const ElfSectionHeader& s) const;
  // "PATH: what (libelf's last error)", as InvalidArgument.
  absl::Status Error(std::string_view what) const;

  // Bytes at [vaddr, vaddr + size) as mapped by a PT_LOAD's file contents.
  std::optional<std::span<const uint8_t>> BytesAtVaddr(uint64_t vaddr,
                                                       uint64_t size) const;
  // The GNU build-id as lowercase hex, or empty.
  std::string BuildId() const;
  // .gnu_debuglink's file name, if any (the CRC is not checked: the
  // build-id lookup comes first and is exact).
  std::optional<std::string> DebugLink() const;
  // A file opened by path is mapped read-only: drops the pages read so far
  // from this process's memory (the page cache keeps them; reading maps
  // them again). No-op for an in-memory image.
  void DropResidentPages() const;

 private:
  ElfFile() = default;
  absl::Status Init();
  absl::Status ReadHeaders(const GElf_Ehdr& ehdr);

  std::string path_;
  // Declared before elf_ so they outlive it.
  std::vector<uint8_t> owned_bytes_;  // for FromBytes
  UniqueFd fd_;
  ElfPtr elf_;
  std::span<const uint8_t> image_;    // the whole file
  uint64_t entry_ = 0;
  uint16_t machine_ = 0;
  Arch arch_ = Arch::kX86_64;
  std::vector<ElfSegment> segments_;
  std::vector<ElfSectionHeader> headers_;
};

}  // namespace ehprof

#endif  // EHPROF_ELF_ELF_FILE_H_
