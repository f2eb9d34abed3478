// The role "ELF file + address -> function name" that the profiler's output
// needs. SymbolCache fills it from symbol tables; a DWARF-based symbolizer
// (file:line, inlined frames) can replace it behind the same interface.
#ifndef EHPROF_SYMBOLIZER_SYMBOLIZER_H_
#define EHPROF_SYMBOLIZER_SYMBOLIZER_H_

#include <cstdint>
#include <optional>
#include <string>

namespace ehprof {

class Symbolizer {
 public:
  virtual ~Symbolizer() = default;
  // The raw (mangled) name of the function holding `elf_vaddr`, an ELF
  // virtual address in `path` (not a runtime address: the caller undoes
  // the mapping's load bias). Must be safe to call from several threads.
  virtual std::optional<std::string> FunctionName(const std::string& path,
                                                  uint64_t elf_vaddr) = 0;
};

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_SYMBOLIZER_H_
