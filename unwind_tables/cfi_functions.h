// The functions a file's CFI describes: one address range per FDE. A
// stripped binary names only its exported functions, but every function the
// compiler emitted still has an FDE, and its start identifies the function:
// profiles name unnamed code "fio+0x29bc0" by it instead of merging every
// unnamed function of a file into one "[unknown]" frame.
#ifndef EHPROF_UNWIND_TABLES_CFI_FUNCTIONS_H_
#define EHPROF_UNWIND_TABLES_CFI_FUNCTIONS_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "elf/elf_file.h"

namespace ehprof {

struct FunctionRange {
  uint64_t begin = 0;  // ELF virtual address
  uint64_t end = 0;
};

class CfiFunctions {
 public:
  // The FDE ranges of .eh_frame, else .debug_frame: sorted, without
  // overlaps (the first by address wins, as in the unwind tables). A file
  // without CFI gives an empty set; a malformed section an error naming it.
  static absl::StatusOr<CfiFunctions> FromElf(const ElfFile& elf);
  static CfiFunctions FromRanges(std::vector<FunctionRange> ranges);

  // The range holding vaddr, if an FDE covers it.
  std::optional<FunctionRange> Find(uint64_t vaddr) const;
  size_t size() const { return ranges_.size(); }
  const std::vector<FunctionRange>& ranges() const { return ranges_; }

 private:
  std::vector<FunctionRange> ranges_;
};

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_CFI_FUNCTIONS_H_
