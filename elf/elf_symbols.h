// The defined symbols of an ELF file's symbol table (.dynsym with .dynstr,
// or .symtab with .strtab), for the readers of interpreter binaries that
// look a few names up (agent/ruby, agent/php): each name bounded by its
// string table, undefined symbols skipped.
#ifndef EHPROF_ELF_ELF_SYMBOLS_H_
#define EHPROF_ELF_ELF_SYMBOLS_H_

#include <cstdint>
#include <string_view>

#include "absl/functional/function_ref.h"
#include "elf/elf_file.h"

namespace ehprof {

struct ElfSymbol {
  std::string_view name;
  uint64_t value = 0, size = 0;
  uint32_t index = 0;  // in its table (relocations name symbols by it)
  uint8_t type = 0;    // ELF64_ST_TYPE: STT_FUNC, STT_OBJECT, STT_TLS, ...
};

// Calls fn for each defined symbol of `table`; nothing when the file has
// no such table.
void ForEachDefinedSymbol(const ElfFile& elf, std::string_view table, std::string_view strings,
                          absl::FunctionRef<void(const ElfSymbol&)> fn);

}  // namespace ehprof

#endif  // EHPROF_ELF_ELF_SYMBOLS_H_
