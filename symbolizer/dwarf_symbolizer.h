// Source-level symbolization (function, file:line, inline chains) from DWARF
// through elfutils' libdwfl; SymbolCache names what DWARF does not cover.
//
// Debug info is found as FindDebuginfoSafely finds it
// (symbolizer/safe_debuginfo.h): the file itself,
// /usr/lib/debug/.build-id/xx/rest.debug, a plain .gnu_debuglink name
// (next to the file, in .debug/, under /usr/lib/debug), each opened so that
// a FIFO, device or symlink a user put there is refused, then, when
// DEBUGINFOD_URLS is set, the debuginfod servers (downloads go to
// DEBUGINFOD_CACHE_PATH, default ~/.cache/debuginfod_client). The
// constructor bounds each server's wait (DEBUGINFOD_TIMEOUT=5,
// DEBUGINFOD_RETRY_LIMIT=0 unless set; symbolizer/debuginfod_client.h): a
// server that is down costs each file without local debug info one bounded
// wait, when that file is first used.
#ifndef EHPROF_SYMBOLIZER_DWARF_SYMBOLIZER_H_
#define EHPROF_SYMBOLIZER_DWARF_SYMBOLIZER_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "base/mutex.h"
#include "base/warnings.h"
#include "symbolizer/go_tables.h"
#include "symbolizer/symbol_cache.h"
#include "symbolizer/symbolizer.h"

namespace ehprof {

class DwarfSymbolizer : public Symbolizer {
 public:
  // `symbols` names addresses in files without DWARF (it reads .symtab,
  // MiniDebugInfo and separate debug files, and names PLT stubs); pass the
  // profile's own to share its tables. nullptr: a private one. Load
  // errors, each naming its file, go to `warnings` (not owned; it outlives
  // the symbolizer). Sets the debuginfod variables above if unset:
  // construct before starting threads.
  explicit DwarfSymbolizer(Warnings* warnings, std::shared_ptr<SymbolCache> symbols = nullptr);
  ~DwarfSymbolizer() override;
  DwarfSymbolizer(const DwarfSymbolizer&) = delete;
  DwarfSymbolizer& operator=(const DwarfSymbolizer&) = delete;

  // The innermost function that is not an inline expansion (DWARF's
  // DW_AT_linkage_name, else DW_AT_name); without a DWARF scope, the ELF
  // symbol; nullopt when nothing covers the address.
  std::optional<std::string> FunctionName(const std::string& path, uint64_t elf_vaddr) override;
  // Innermost first, as `eu-addr2line -i -f` prints them: each frame has
  // the source position inside it (the innermost's from the line table,
  // an outer one's from the call site of the frame it inlined). Relative
  // file names are joined to the unit's DW_AT_comp_dir, as eu-addr2line's
  // default -A does (Debian builds with relative names: "./malloc/...").
  std::vector<SourceFrame> Frames(const std::string& path, uint64_t elf_vaddr) override;

  // A file (or its separate debug file) whose compressed DWARF sections
  // would take more than `bytes` of heap once expanded (libdw expands
  // them when it opens them) is symbolized from its symbol tables only,
  // and a warning says so. 0 (the default): no cap. Set before lookups.
  void SetMaxExpandedDwarf(uint64_t bytes) { max_expanded_dwarf_ = bytes; }
  // The same for all files whose DWARF sessions are open at once (a
  // file's session counts until CloseSession or Evict): past it, further
  // files are named from their symbol tables. 0 (the default): no cap.
  // Concurrent first lookups in different files may each take what is
  // left: the overshoot is bounded by the number of lookup threads.
  void SetMaxExpandedDwarfTotal(uint64_t bytes) { max_expanded_dwarf_total_ = bytes; }
  // The expanded compressed DWARF of the files whose sessions are open.
  uint64_t expanded_dwarf_open() const { return expanded_open_.load(); }

  // Whether `path` (loading it if needed) has DWARF, its own or found.
  bool HasDwarf(const std::string& path);

  // From the ELF symbol tables (DWARF's low_pc would name inline
  // instances' starts too; the symbol is what perf shows offsets from).
  std::optional<uint64_t> FunctionStart(const std::string& path, uint64_t elf_vaddr) override;
  // Closes `path`'s DWARF session and forgets its symbol tables (the
  // agent's memory budget); the next lookup opens them again.
  void Evict(const std::string& path);
  // Closes `path`'s DWARF session (libdw's caches, its mapping of the
  // debug file) but remembers whether it has DWARF and keeps its symbol
  // tables: the next lookup there opens the session again. Files found
  // without DWARF are not looked for again.
  void CloseSession(const std::string& path);
  // The pages of files kept mapped (string tables, Go binaries) that
  // lookups made resident leave this process's RSS; the page cache keeps
  // them for the next lookup.
  void DropResidentPages() {
    go_.DropResidentPages();
    symbols_->DropResidentPages();
  }

 private:
  struct Module;  // one file's Dwfl (dwarf_symbolizer.cc)
  std::shared_ptr<Module> Get(const std::string& path);
  std::vector<SourceFrame> Lookup(const std::string& path, uint64_t elf_vaddr, bool with_lines);

  std::shared_ptr<SymbolCache> symbols_;
  // Go code is named from its pclntab first (Go's own tools read it too),
  // the stripped build's included.
  GoTables go_;
  uint64_t max_expanded_dwarf_ = 0;
  uint64_t max_expanded_dwarf_total_ = 0;
  std::atomic<uint64_t> expanded_open_{0};
  // base/mutex.h's rather than absl::Mutex: see SymbolCache.
  Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<Module>> modules_ ABSL_GUARDED_BY(mu_);
  Warnings* warnings_;
};

}  // namespace ehprof

#endif  // EHPROF_SYMBOLIZER_DWARF_SYMBOLIZER_H_
