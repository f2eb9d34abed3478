// The function symbols of one ELF file, for address -> name lookups.
//
// Sources, merged: .symtab (or .dynsym when there is none), the local
// function symbols of a MiniDebugInfo (.gnu_debugdata) section, and
// synthesized "name@plt" stubs. Names are raw (mangled); see demangle.h.
//
// Compact: one sorted array of entries (24-byte address ranges and name
// references, one per address), and the names where the file has them:
// its string table stays in the file, mapped (a name's page becomes
// resident when it is looked up); only names the file does not hold as
// such (MiniDebugInfo's, "@plt" stubs) are copied into one pool.
#ifndef EHPROF_SYMBOLIZER_ELF_SYMBOLS_H_
#define EHPROF_SYMBOLIZER_ELF_SYMBOLS_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "base/unique_fd.h"
#include "base/mapped_range.h"
#include "elf/elf_file.h"

namespace ehprof {

struct ElfSymbol {
  std::string name;
  uint64_t start = 0;  // ELF virtual address
  // The extent lookups use: st_size, or for a size-0 symbol the distance to
  // the next symbol (bounded by the end of its section).
  uint64_t size = 0;
};

class ElfSymbols {
 public:
  // Reads `path` once; the result is immutable and safe to share between
  // threads. Corrupt files give an error naming the file; a valid file
  // without symbols gives an empty table.
  static absl::StatusOr<std::shared_ptr<const ElfSymbols>> Load(const std::string& path);
  // From an fd already opened and checked (OpenUntrustedFile); `path`
  // names it in messages.
  static absl::StatusOr<std::shared_ptr<const ElfSymbols>> FromFd(UniqueFd fd, std::string path);
  // The same from an in-memory image (tests, fuzzers); `name` is used in
  // messages.
  static absl::StatusOr<std::shared_ptr<const ElfSymbols>> FromBytes(
      std::string name, std::vector<uint8_t> bytes);
  // From a file already opened; the table keeps nothing of `elf`.
  static absl::StatusOr<std::shared_ptr<const ElfSymbols>> FromElf(const ElfFile& elf);

  // The innermost symbol containing `vaddr`, if any.
  std::optional<ElfSymbol> Find(uint64_t vaddr) const;

  // Whether one symbol holds all of [begin, end): Find then names every
  // address there.
  bool Covers(uint64_t begin, uint64_t end) const;

  size_t size() const { return entries_.size(); }
  bool has_mini_debug_info() const { return has_mini_debug_info_; }
  // Heap held (the entries and the pool), and the mapped string table's size.
  uint64_t heap_bytes() const { return entries_.capacity() * sizeof(Entry) + names_.capacity(); }
  uint64_t mapped_bytes() const { return strtab_.size(); }
  // The string table's pages read by lookups leave this process's RSS
  // (read again from the page cache on the next lookup that needs them).
  void DropResidentNames() const { strtab_.DropResident(); }

 private:
  struct Entry {
    uint64_t start;
    uint32_t size;         // the extent; larger functions are cut at 4 GiB
    uint32_t name_offset;  // into strtab_ (kMapped set in name_size) or names_
    uint32_t name_size;
    // The nearest earlier entry that still covers `start` (nesting, e.g. a
    // size-0 label inside a sized function), or kNoParent.
    uint32_t parent;
    uint64_t end() const { return start + size; }
  };
  static_assert(sizeof(Entry) == 24);
  static constexpr uint32_t kNoParent = UINT32_MAX;
  static constexpr uint32_t kMapped = 1u << 31;

  ElfSymbols() = default;

  std::vector<Entry> entries_;  // sorted by start, one per address
  std::string names_;
  MappedRange strtab_;  // the file's string table the names are in
  bool has_mini_debug_info_ = false;

  friend class ElfSymbolsBuilder;
};

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_ELF_SYMBOLS_H_
