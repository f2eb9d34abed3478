// The role "ELF file + address -> function name" that the profiler's output
// needs. SymbolCache fills it from symbol tables; a DWARF-based symbolizer
// (file:line, inlined frames) can replace it behind the same interface.
#ifndef EHPROF_SYMBOLIZER_SYMBOLIZER_H_
#define EHPROF_SYMBOLIZER_SYMBOLIZER_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ehprof {

class Symbolizer {
 public:
  virtual ~Symbolizer() = default;
  // The raw (mangled) name of the function holding `elf_vaddr`, an ELF
  // virtual address in `path` (not a runtime address: the caller undoes
  // the mapping's load bias). Must be safe to call from several threads.
  virtual std::optional<std::string> FunctionName(const std::string& path,
                                                  uint64_t elf_vaddr) = 0;

  // The first address of the function holding `elf_vaddr`, when known.
  virtual std::optional<uint64_t> FunctionStart(const std::string& path, uint64_t elf_vaddr) {
    return std::nullopt;
  }

  // What an address shows as in a profile, innermost first: the inline
  // expansions that contain it (inlined = true), then the function itself,
  // each with its source position when debug info has one. Empty when
  // nothing is known. The default has no source information.
  struct SourceFrame {
    std::string function;  // raw (mangled) name
    std::string file;      // empty when unknown
    uint32_t line = 0;     // 0 when unknown
    bool inlined = false;
  };
  virtual std::vector<SourceFrame> Frames(const std::string& path, uint64_t elf_vaddr) {
    std::vector<SourceFrame> out;
    if (auto name = FunctionName(path, elf_vaddr)) out.push_back({*name, "", 0, false});
    return out;
  }
};

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_SYMBOLIZER_H_
