// Turns an IntervalProfile into resolved samples per service, off the
// recording thread. Its caches survive from one interval to the next (the
// same hot addresses come back every interval) and are bounded: the
// address cache keeps two generations of at most max_addresses each, and
// the per-file symbol readers are dropped and reopened once more than
// max_files files have been read, so a machine that runs new binaries for
// days does not grow this.
#ifndef EHPROF_AGENT_CONTINUOUS_INTERVAL_SYMBOLIZER_H_
#define EHPROF_AGENT_CONTINUOUS_INTERVAL_SYMBOLIZER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "agent/continuous/interval_profile.h"
#include "agent/resolve/resolved_sample.h"
#include "symbolizer/dwarf_symbolizer.h"
#include "symbolizer/kallsyms.h"
#include "symbolizer/symbol_cache.h"

namespace ehprof {

class IntervalSymbolizer {
 public:
  struct Options {
    size_t max_addresses = 100000;
    size_t max_files = 64;
    bool demangle = true;
    std::string vdso_file;  // a copy of the vDSO image to read "[vdso]" from
  };
  explicit IntervalSymbolizer(Options options);

  // service name -> its samples (count = occurrences in the interval).
  std::map<std::string, std::vector<ResolvedSample>> Resolve(const IntervalProfile& p);
  std::vector<std::string> TakeWarnings();
  // Drops every cache and symbol reader (the agent's memory budget).
  void Reset();

 private:
  struct Symbolized {
    std::vector<Symbolizer::SourceFrame> frames;  // innermost first
    uint64_t start = 0;
  };
  const Symbolized& Lookup(const std::string& file, uint64_t vaddr);
  void ResetReaders();
  void AddUser(const IntervalProfile& p, const LocatedFrame& f, std::vector<ResolvedFrame>* out);

  Options options_;
  std::optional<Kallsyms> kallsyms_;
  std::shared_ptr<SymbolCache> names_;
  std::unique_ptr<DwarfSymbolizer> dwarf_;
  absl::flat_hash_set<std::string> files_;
  using Cache = absl::flat_hash_map<std::pair<std::string, uint64_t>, Symbolized>;
  Cache current_, previous_;
  std::vector<std::string> warnings_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_INTERVAL_SYMBOLIZER_H_
