// The defined symbols of an ELF file's symbol table (.dynsym with .dynstr,
// or .symtab with .strtab), for the readers of interpreter binaries that
// look a few names up (agent/ruby, agent/php): each name bounded by its
// string table, undefined symbols skipped.
#ifndef EHPROF_ELF_ELF_SYMBOLS_H_
#define EHPROF_ELF_ELF_SYMBOLS_H_

#include <cstdint>
#include <optional>
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

// A thread-local variable's GOT pair in a shared object (x86-64): the slot
// of its R_X86_64_DTPMOD64 relocation, where the dynamic linker writes the
// module id, and its offset in the module's TLS block (DTPOFF64: the
// symbol's value + addend). `sym` is from .dynsym, whose indices the
// relocations name. Nothing when .rela.dyn lacks either relocation.
struct TlsGotPair {
  uint64_t modid_slot = 0;
  int64_t offset = 0;
};
std::optional<TlsGotPair> FindTlsGotPair(const ElfFile& elf, const ElfSymbol& sym);

}  // namespace ehprof

#endif  // EHPROF_ELF_ELF_SYMBOLS_H_
