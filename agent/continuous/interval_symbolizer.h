// Turns an IntervalProfile into resolved samples per service, off the
// recording thread. What it keeps from one interval to the next is
// bounded and planned, never dropped all at once:
//  - each file's symbol data (ELF symbol tables, FDE ranges), loaded on
//    first use and counted exactly (SymbolCache::FileBytes), so a memory
//    budget can evict the least recently used file's data first
//    (EvictFor); at most max_files files are kept;
//  - DWARF sessions (libdw's caches and its mapping of the debug file:
//    tens of MB for a libc or libpython with debug info) only while an
//    interval is symbolized: closed after it, opened again on the next
//    address the cache does not have;
//  - an address cache (file, address) -> frames in two generations, the
//    current one retired when it holds address_cache_bytes.
#ifndef EHPROF_AGENT_CONTINUOUS_INTERVAL_SYMBOLIZER_H_
#define EHPROF_AGENT_CONTINUOUS_INTERVAL_SYMBOLIZER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "agent/continuous/interval_output.h"
#include "agent/continuous/interval_profile.h"
#include "agent/resolve/resolved_sample.h"
#include "symbolizer/dwarf_symbolizer.h"
#include "symbolizer/kallsyms.h"
#include "symbolizer/symbol_cache.h"

namespace ehprof {

class IntervalSymbolizer {
 public:
  struct Options {
    size_t address_cache_bytes = 4 << 20;
    size_t max_files = 64;
    bool close_dwarf_sessions = true;  // after each Resolve
    // A file whose compressed DWARF would expand past this is named from
    // its symbol tables only (big Go binaries compress theirs).
    uint64_t max_expanded_dwarf = 24 << 20;
    bool demangle = true;
    std::string vdso_file;  // a copy of the vDSO image to read "[vdso]" from
  };
  explicit IntervalSymbolizer(Options options);

  // The interval's stacks (count = occurrences in the interval) into
  // out->profile, by service.
  void Resolve(const IntervalProfile& p, IntervalOutput* out);
  std::vector<std::string> TakeWarnings();

  struct Usage {
    size_t files = 0;            // files whose symbol data is loaded
    uint64_t symbol_bytes = 0;   // their measured heap
    size_t addresses = 0;        // in the address cache
    uint64_t address_bytes = 0;  // its heap (estimated from its contents)
    uint64_t files_evicted = 0;  // since start: files whose data was evicted
    uint64_t bytes_evicted = 0;  // heap that freed
    std::vector<std::pair<std::string, uint64_t>> largest;  // the 3 largest files, largest first
  };
  Usage usage() const;
  // Evicts the least recently used files' symbol data until `bytes` of
  // heap are freed, never a file the last Resolve used. Returns the files
  // and bytes evicted.
  std::pair<size_t, uint64_t> EvictFor(uint64_t bytes);

 private:
  struct Symbolized {
    std::vector<Symbolizer::SourceFrame> frames;  // innermost first
    uint64_t start = 0;
  };
  struct File {
    std::string path;
    uint64_t last_used = 0;  // the Resolve call that last used it
  };
  const Symbolized& Lookup(const std::string& file, uint64_t vaddr);
  uint32_t FileId(const std::string& path);
  // The file a frame in `m` is looked up in first (its debug file, else
  // the file), nullptr when it is not a file.
  const std::string* FirstFile(const LocatedMapping& m) const;
  // Looks up the profile's new addresses file by file, each file's DWARF
  // session closed before the next one's opens: one open at a time.
  void Prefetch(const IntervalProfile& p);
  void CloseSession(const File& f);
  void Evict(uint32_t id);
  void AddUser(const IntervalProfile& p, const LocatedFrame& f, std::vector<ResolvedFrame>* out);
  static ResolvedFrame PythonFrameOf(const IntervalProfile& p, const LocatedFrame& f);

  Options options_;
  std::optional<Kallsyms> kallsyms_;
  std::shared_ptr<SymbolCache> names_;
  std::unique_ptr<DwarfSymbolizer> dwarf_;
  // Files by id; an evicted file's id is never reused (the address cache
  // may still hold entries under it, which then age out unused).
  absl::flat_hash_map<std::string, uint32_t> file_ids_;
  absl::flat_hash_map<uint32_t, File> files_;
  uint32_t next_file_id_ = 0;
  uint64_t resolve_calls_ = 0;
  uint64_t files_evicted_ = 0, bytes_evicted_ = 0;
  using Cache = absl::flat_hash_map<std::pair<uint32_t, uint64_t>, Symbolized>;
  Cache current_, previous_;
  uint64_t current_bytes_ = 0, previous_bytes_ = 0;
  std::vector<std::string> warnings_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_INTERVAL_SYMBOLIZER_H_
