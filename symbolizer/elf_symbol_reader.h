// Reads the function symbols of one ElfFile, before ElfSymbols merges them.
#ifndef EHPROF_SYMBOLIZER_ELF_SYMBOL_READER_H_
#define EHPROF_SYMBOLIZER_ELF_SYMBOL_READER_H_

#include <cstdint>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "elf/elf_file.h"

namespace ehprof::symbolizer_internal {

struct RawSymbol {
  // Into the image's string table (or a pool the caller keeps): valid
  // while both are.
  std::string_view name;
  uint64_t addr = 0;
  uint64_t size = 0;
  // End address of the section holding the symbol, bounding a size-0
  // symbol's extent; 0 when unknown.
  uint64_t section_end = 0;
  // Which name wins among symbols at one address: global 2, weak 1, local 0.
  int rank = 0;
};

// The most entries one symbol table or relocation section may have here.
// The largest real tables hold a few million (a browser's debug file); a
// file may claim up to its size / 24 (a sparse file costs its owner
// nothing), each of which would cost a RawSymbol and a scan.
inline constexpr uint64_t kMaxTableEntries = uint64_t{8} << 20;

// Appends the defined STT_FUNC / STT_GNU_IFUNC symbols with a non-zero
// address from the first section of type `sh_type` (SHT_SYMTAB or
// SHT_DYNSYM). Returns false when there is no such section; an error
// naming the file and section when it has more than kMaxTableEntries.
absl::StatusOr<bool> AppendFunctionSymbols(const ElfFile& img, uint32_t sh_type,
                                           std::vector<RawSymbol>* out);

// Appends "name@plt" for each x86-64 PLT stub (.plt, .plt.sec, .plt.got)
// whose indirect jump goes through a GOT slot that a JUMP_SLOT or GLOB_DAT
// relocation names, as objdump does: decoding the jump rather than counting
// entries also covers IBT's .plt.sec and -z now's .plt.got.
// Their names are kept in `names`.
absl::Status AppendPltSymbols(const ElfFile& img, std::vector<RawSymbol>* out,
                              std::deque<std::string>* names);

}  // namespace ehprof::symbolizer_internal

#endif  // EHPROF_SYMBOLIZER_ELF_SYMBOL_READER_H_
