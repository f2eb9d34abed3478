// Turns an IntervalProfile into resolved samples per service, off the
// recording thread. User addresses are named through an AddressSymbolizer
// (agent/resolve/address_symbolizer.h: the cache `record` names its
// samples through too), with the agent's budget: at most max_files files'
// symbol data, the least recently used evicted first; DWARF sessions only
// while an interval is symbolized (closed after it, opened again on the
// next address the cache does not have); an address cache in two
// generations, the current one retired when it holds address_cache_bytes.
// JIT code (frames in anonymous memory or in no mapping) is named from its
// process's perf map as `record` names it (JitSymbols: each map kept, read
// again when it grew, at most max_jit_entries entries for all processes).
#ifndef EHPROF_AGENT_CONTINUOUS_INTERVAL_SYMBOLIZER_H_
#define EHPROF_AGENT_CONTINUOUS_INTERVAL_SYMBOLIZER_H_

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/continuous/interval_output.h"
#include "agent/continuous/interval_profile.h"
#include "agent/output/stack_view.h"
#include "agent/resolve/address_symbolizer.h"
#include "agent/resolve/frame_locator.h"
#include "agent/resolve/resolved_sample.h"
#include "symbolizer/kallsyms.h"

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
    size_t max_jit_entries = 200000;
    // Names and bookkeeping of those entries (a node map averages ~120
    // bytes an entry: the entry bound comes first in practice).
    size_t max_jit_bytes = size_t{32} << 20;
    // Empty: each process's own /tmp/perf-PID.map (JitSymbols::Options).
    std::string perf_map_dir;
    // The frames the profiles keep (--view).
    StackView view = StackView::kFull;
  };
  // Files, perf maps and kernel symbols that fail to load go to `warnings`
  // (not owned; it outlives the symbolizer).
  IntervalSymbolizer(Options options, Warnings* warnings);

  // The interval's stacks (count = occurrences in the interval) into
  // out->profile, by service; container_name names the services'
  // containers (ServiceProfileBuilder).
  void Resolve(const IntervalProfile& p, IntervalOutput* out,
               ServiceProfileBuilder::NameOf container_name = nullptr);

  using Usage = AddressSymbolizer::Usage;
  Usage usage() const { return symbols_.usage(); }
  // Evicts the least recently used files' symbol data until `bytes` of
  // heap are freed, never a file the last Resolve used. Returns the files
  // and bytes evicted.
  std::pair<size_t, uint64_t> EvictFor(uint64_t bytes) { return symbols_.EvictFor(bytes); }
  // Drops what is kept for `file` (a kept fd's path about to be closed).
  void Forget(const std::string& file) { symbols_.Forget(file); }

 private:
  // The file a frame in `m` is looked up in first (its debug file, else
  // the file), nullptr when it is not a file.
  const std::string* FirstFile(const LocatedMapping& m) const;
  // Looks up the profile's new addresses file by file, each file's DWARF
  // session closed before the next one's opens: one open at a time.
  void Prefetch(const IntervalProfile& p);
  void AddUser(const IntervalProfile& p, const LocatedFrame& f, std::vector<ResolvedFrame>* out);
  static ResolvedFrame PythonFrameOf(const IntervalProfile& p, const LocatedFrame& f);
  // A Python, Ruby or PHP frame (kPython, kInterp).
  static ResolvedFrame InterpreterLoopFrameOf(const IntervalProfile& p, const LocatedFrame& f);

  Options options_;
  std::optional<Kallsyms> kallsyms_;
  AddressSymbolizer symbols_;
  JitSymbols jit_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_INTERVAL_SYMBOLIZER_H_
