// Symbol tables per ELF file, loaded on first use and kept.
#ifndef EHPROF_SYMBOLIZER_SYMBOL_CACHE_H_
#define EHPROF_SYMBOLIZER_SYMBOL_CACHE_H_

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/mutex.h"
#include "base/warnings.h"
#include "symbolizer/elf_symbols.h"
#include "symbolizer/symbolizer.h"
#include "unwind_tables/cfi_functions.h"

namespace ehprof {

// The FDE ranges of `cfi` that no single symbol of `tables` holds whole:
// SymbolCache keeps only those, since a lookup reaches the FDEs only where
// no symbol covers the address.
CfiFunctions UncoveredRanges(const CfiFunctions& cfi,
                             std::initializer_list<std::shared_ptr<const ElfSymbols>> tables);

class SymbolCache : public Symbolizer {
 public:
  // Load errors go to `warnings` (not owned; it outlives the cache).
  explicit SymbolCache(Warnings* warnings) : warnings_(warnings) {}
  SymbolCache(const SymbolCache&) = delete;
  SymbolCache& operator=(const SymbolCache&) = delete;

  // nullopt when the file cannot be read or neither a symbol nor an FDE
  // covers `vaddr` (code no symbol names is "basename+0xFDE_START", its
  // FDE's start as an ELF virtual address). A file that fails to load is
  // tried once; its error goes to the warnings.
  std::optional<std::string> Symbolize(const std::string& path, uint64_t vaddr);
  // The symbol holding vaddr: the debug file's first, then the file's own,
  // then the FDE's.
  std::optional<ElfSymbol> Lookup(const std::string& path, uint64_t vaddr);
  std::optional<uint64_t> FunctionStart(const std::string& path, uint64_t elf_vaddr) override {
    auto sym = Lookup(path, elf_vaddr);
    return sym ? std::optional<uint64_t>(sym->start) : std::nullopt;
  }
  std::optional<std::string> FunctionName(const std::string& path,
                                          uint64_t elf_vaddr) override {
    return Symbolize(path, elf_vaddr);
  }

  // The file's table, loading it if needed; nullptr when it failed to load.
  std::shared_ptr<const ElfSymbols> Get(const std::string& path);

  // Forgets `path`'s tables (the agent's memory budget); the next lookup
  // loads them again. Lookups in progress keep theirs until they return.
  void Evict(const std::string& path);
  // The heap `path`'s tables hold (symbol entries and names, the debug
  // file's, FDE ranges); 0 when not loaded.
  uint64_t FileBytes(const std::string& path);
  // The string-table pages lookups made resident leave this process's RSS
  // (ElfSymbols::DropResidentNames): every loaded file's.
  void DropResidentPages();

 private:
  // One per path; loaded outside mu_ so that a large file does not stall
  // lookups in files already loaded.
  struct Slot {
    Mutex mu;
    bool loaded ABSL_GUARDED_BY(mu) = false;
    std::shared_ptr<const ElfSymbols> table ABSL_GUARDED_BY(mu);
    // The separate debug file's (Debian's -dbg/-dbgsym, by build-id or
    // .gnu_debuglink): its .symtab names the static functions a stripped
    // file lacks. Consulted first.
    std::shared_ptr<const ElfSymbols> debug_table ABSL_GUARDED_BY(mu);
    // The file's FDE ranges, read on the first address no symbol covers:
    // unnamed functions are named "file+0xSTART" by them.
    bool cfi_loaded ABSL_GUARDED_BY(mu) = false;
    std::shared_ptr<const CfiFunctions> cfi ABSL_GUARDED_BY(mu);
  };
  // "basename+0xSTART" for the FDE holding vaddr.
  std::optional<ElfSymbol> FromCfi(const std::string& path, Slot* slot, uint64_t vaddr)
      ABSL_LOCKS_EXCLUDED(slot->mu);
  void Load(const std::string& path, Slot* slot) ABSL_EXCLUSIVE_LOCKS_REQUIRED(slot->mu);

  // base/mutex.h's (std::mutex underneath) rather than absl::Mutex: Debian's
  // prebuilt abseil is not TSan-instrumented, so TSan cannot see
  // absl::Mutex's ordering and reports false races.
  Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Slot>> slots_ ABSL_GUARDED_BY(mu_);
  Warnings* warnings_;
};

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_SYMBOL_CACHE_H_
