// (file, ELF address) -> the source frames there: the one symbolization
// path and cache that `record` (ResolveSamples) and `agent`
// (IntervalSymbolizer) both name user addresses through. What it keeps is
// bounded and planned, never dropped all at once:
//  - each file's symbol data (ELF symbol tables, FDE ranges), loaded on
//    first use and counted exactly (SymbolCache::FileBytes), so a memory
//    budget can evict the least recently used file's data first
//    (EvictFor); at most max_files files are kept;
//  - DWARF sessions (libdw's caches and its mapping of the debug file)
//    until CloseSession/CloseSessions (the agent closes them after each
//    interval, opening them again on the next address not cached);
//  - an address cache (file, address) -> frames in two generations, the
//    current one retired at NextRound when it holds address_cache_bytes.
// A function is named as the ELF symbol tables name it, where they do (as
// perf does: DWARF may name glibc's functions by internal aliases); its
// inline expansions keep DWARF's names.
#ifndef EHPROF_AGENT_RESOLVE_ADDRESS_SYMBOLIZER_H_
#define EHPROF_AGENT_RESOLVE_ADDRESS_SYMBOLIZER_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "symbolizer/dwarf_symbolizer.h"
#include "symbolizer/symbol_cache.h"

namespace ehprof {

class AddressSymbolizer {
 public:
  struct Options {
    size_t address_cache_bytes = std::numeric_limits<size_t>::max();
    size_t max_files = std::numeric_limits<size_t>::max();
    // A file whose compressed DWARF would expand past this is named from
    // its symbol tables only (0: no limit).
    uint64_t max_expanded_dwarf = 0;
    // The same for all files with open DWARF sessions together (0: no limit).
    uint64_t max_expanded_dwarf_total = 0;
    bool demangle = true;
  };
  struct Symbolized {
    std::vector<Symbolizer::SourceFrame> frames;  // innermost first
    uint64_t start = 0;                           // the function's first address (0: unknown)
  };
  struct Usage {
    size_t files = 0;            // files whose symbol data is loaded
    uint64_t symbol_bytes = 0;   // their measured heap
    size_t addresses = 0;        // in the address cache
    uint64_t address_bytes = 0;  // its heap (estimated from its contents)
    uint64_t files_evicted = 0;  // since start: files whose data was evicted
    uint64_t bytes_evicted = 0;  // heap that freed
    std::vector<std::pair<std::string, uint64_t>> largest;  // the 3 largest files, largest first
  };

  // Files that fail to load go to `warnings` (not owned; it outlives the
  // symbolizer), each once.
  AddressSymbolizer(Options options, Warnings* warnings);

  // `file` must be a path ("/..."); no frames when it has no symbols.
  const Symbolized& Lookup(const std::string& file, uint64_t vaddr);
  // A new round of lookups (the agent's interval): the address cache's
  // current generation is retired if full; files used from here on are
  // the round's, never evicted by EvictFor before the next round.
  void NextRound();
  void CloseSession(const std::string& file) { dwarf_->CloseSession(file); }
  // Every file's DWARF session; and the pages of mapped files (string
  // tables, Go binaries) lookups made resident leave RSS until read again.
  void CloseSessions();

  Usage usage() const;
  // Evicts the least recently used files' symbol data until `bytes` of
  // heap are freed, never a file of the current round. Returns the files
  // and bytes evicted.
  std::pair<size_t, uint64_t> EvictFor(uint64_t bytes);
  // Drops `file`'s symbol data and DWARF session (not counted as evicted):
  // its path is about to name another file (a closed fd's number reused).
  // Its address cache entries are never looked up again.
  void Forget(const std::string& file);

 private:
  struct File {
    std::string path;
    uint64_t last_used = 0;  // the round that last used it
  };
  uint32_t FileId(const std::string& path);
  // Drops the file's data; `counted`: for the budget (files_evicted_).
  void Evict(uint32_t id, bool counted = true);

  Options options_;
  std::shared_ptr<SymbolCache> names_;
  std::unique_ptr<DwarfSymbolizer> dwarf_;
  // Files by id; an evicted file's id is never reused (the address cache
  // may still hold entries under it, which then age out unused).
  absl::flat_hash_map<std::string, uint32_t> file_ids_;
  absl::flat_hash_map<uint32_t, File> files_;
  uint32_t next_file_id_ = 0;
  uint64_t round_ = 0;
  uint64_t files_evicted_ = 0, bytes_evicted_ = 0;
  using Cache = absl::flat_hash_map<std::pair<uint32_t, uint64_t>, Symbolized>;
  Cache current_, previous_;
  uint64_t current_bytes_ = 0, previous_bytes_ = 0;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_RESOLVE_ADDRESS_SYMBOLIZER_H_
