#include "agent/continuous/interval_symbolizer.h"

#include "absl/strings/str_cat.h"
#include "agent/resolve/profile_resolver.h"
#include "symbolizer/demangle.h"

namespace ehprof {

IntervalSymbolizer::IntervalSymbolizer(Options options) : options_(std::move(options)) {
  auto k = Kallsyms::Load();
  if (k.ok()) {
    kallsyms_ = std::move(*k);
  } else {
    warnings_.push_back(absl::StrCat("kernel symbols unavailable: ", k.status().message()));
  }
  ResetReaders();
}

void IntervalSymbolizer::ResetReaders() {
  names_ = std::make_shared<SymbolCache>();
  dwarf_ = std::make_unique<DwarfSymbolizer>(names_);
  files_.clear();
}

const IntervalSymbolizer::Symbolized& IntervalSymbolizer::Lookup(const std::string& file,
                                                                  uint64_t vaddr) {
  auto key = std::make_pair(file, vaddr);
  if (auto it = current_.find(key); it != current_.end()) return it->second;
  if (auto it = previous_.find(key); it != previous_.end()) {
    return current_.emplace(key, std::move(it->second)).first->second;
  }
  if (current_.size() >= options_.max_addresses) {
    previous_ = std::move(current_);
    current_ = Cache();
  }
  if (files_.insert(file).second && files_.size() > options_.max_files) {
    for (std::string& w : dwarf_->TakeWarnings()) warnings_.push_back(std::move(w));
    ResetReaders();
    files_.insert(file);
  }
  Symbolized s;
  s.frames = dwarf_->Frames(file, vaddr);
  s.start = dwarf_->FunctionStart(file, vaddr).value_or(0);
  // The function itself named as the symbol tables name it (as perf does);
  // its inline expansions keep DWARF's names.
  if (!s.frames.empty() && !s.frames.back().inlined) {
    if (auto name = names_->FunctionName(file, vaddr)) s.frames.back().function = *name;
  }
  if (options_.demangle) {
    for (auto& f : s.frames) f.function = Demangle(f.function);
  }
  return current_.emplace(std::move(key), std::move(s)).first->second;
}

void IntervalSymbolizer::AddUser(const IntervalProfile& p, const LocatedFrame& f,
                                 std::vector<ResolvedFrame>* out) {
  ResolvedFrame r;
  r.addr = f.addr;
  r.runtime_addr = f.runtime;
  r.symbol = "[unknown]";
  r.dso = "[unknown]";
  if (f.mapping >= p.mappings.size()) {
    out->push_back(std::move(r));
    return;
  }
  const LocatedMapping& m = p.mappings[f.mapping];
  r.dso = m.path == "//anon" ? "[anon]" : m.path;
  r.map_start = m.start;
  r.map_limit = m.limit;
  r.map_offset = m.offset;
  const std::string& named = m.path == "[vdso]" ? options_.vdso_file : m.path;
  // Not files: memfd mappings ("/memfd:name (deleted)"), deleted files.
  if (named.empty() || named[0] != '/' || named.rfind("/memfd:", 0) == 0 ||
      (named.size() > 10 && named.compare(named.size() - 10, 10, " (deleted)") == 0)) {
    out->push_back(std::move(r));
    return;
  }
  // As ResolveSamples does: the debug file found in a container's root
  // first, the file itself for what that does not name (PLT stubs).
  // (An empty symbol_file: the path holds another file now and ehprof kept
  // no fd on the mapped one; its symbols would be wrong names.)
  const std::string* file = m.path == "[vdso]" ? &named : &m.symbol_file;
  if (!m.debug_file.empty() && !Lookup(m.debug_file, f.addr).frames.empty()) file = &m.debug_file;
  if (file->empty()) {
    out->push_back(std::move(r));
    return;
  }
  const Symbolized& s = Lookup(*file, f.addr);
  AppendSourceFrames(r, s.frames, s.start, out);
}

std::map<std::string, std::vector<ResolvedSample>> IntervalSymbolizer::Resolve(
    const IntervalProfile& p) {
  std::map<std::string, std::vector<ResolvedSample>> out;
  for (const auto& [key, value] : p.counts) {
    ResolvedSample s;
    s.comm = p.strings[key.comm];
    s.count = value.count;
    s.off_cpu = key.off_cpu;
    s.weight_ns = value.weight_ns;
    s.labels.emplace_back("service_name", p.strings[key.service]);
    for (uint32_t id : key.frames) {
      const LocatedFrame& f = p.frames[id];
      if (f.mapping == LocatedFrame::kKernel) {
        s.frames.push_back(KernelFrame(f.addr, kallsyms_ ? &*kallsyms_ : nullptr));
      } else {
        AddUser(p, f, &s.frames);
      }
    }
    if (s.off_cpu) DropTracingFrames(&s.frames);
    out[p.strings[key.service]].push_back(std::move(s));
  }
  return out;
}

void IntervalSymbolizer::Reset() {
  for (std::string& w : dwarf_->TakeWarnings()) warnings_.push_back(std::move(w));
  ResetReaders();
  current_ = Cache();
  previous_ = Cache();
}

std::vector<std::string> IntervalSymbolizer::TakeWarnings() {
  for (std::string& w : dwarf_->TakeWarnings()) warnings_.push_back(std::move(w));
  return std::exchange(warnings_, {});
}

}  // namespace ehprof
