// Read-only access to one 64-bit little-endian x86-64 or AArch64 ELF file
// via libelf.
//
// Everything returned points into memory owned by the ElfFile, which must
// outlive it. Files are untrusted: every header and section is validated by
// libelf or here before use, and errors name the file and what was wrong.
#ifndef EHPROF_UNWIND_TABLES_ELF_FILE_H_
#define EHPROF_UNWIND_TABLES_ELF_FILE_H_

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
#include "unwind_tables/arch.h"

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
  // Parses an in-memory image (a vDSO copy, a fuzzer input). `name` is used
  // in messages.
  static absl::StatusOr<ElfFile> FromBytes(std::string name,
                                           std::vector<uint8_t> bytes);

  ElfFile(ElfFile&&) = default;
  ElfFile& operator=(ElfFile&&) = default;

  const std::string& path() const { return path_; }
  // The file it was opened from; -1 for an in-memory image.
  int fd() const { return fd_.valid() ? fd_.get() : -1; }
  uint64_t entry() const { return entry_; }         // e_entry
  Arch arch() const { return arch_; }

  // The named section; nullopt when absent. Compressed (SHF_COMPRESSED)
  // sections are returned decompressed; an error when they cannot be or
  // would expand past kMaxExpandedSectionBytes.
  absl::StatusOr<std::optional<ElfSection>> Section(std::string_view name) const;
  const std::vector<ElfSegment>& segments() const { return segments_; }

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

  std::string path_;
  std::vector<uint8_t> owned_bytes_;  // for FromBytes
  std::span<const uint8_t> image_;    // the whole file
  UniqueFd fd_;
  ElfPtr elf_;
  uint64_t entry_ = 0;
  Arch arch_ = Arch::kX86_64;
  size_t shstrndx_ = 0;
  std::vector<ElfSegment> segments_;
};

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_ELF_FILE_H_
