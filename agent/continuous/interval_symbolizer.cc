#include "agent/continuous/interval_symbolizer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "agent/resolve/profile_resolver.h"

namespace ehprof {

namespace {

AddressSymbolizer::Options AddressOptions(const IntervalSymbolizer::Options& o) {
  AddressSymbolizer::Options a;
  a.address_cache_bytes = o.address_cache_bytes;
  a.max_files = o.max_files;
  a.max_expanded_dwarf = o.max_expanded_dwarf;
  a.demangle = o.demangle;
  return a;
}

}  // namespace

IntervalSymbolizer::IntervalSymbolizer(Options options, Warnings* warnings)
    : options_(std::move(options)),
      symbols_(AddressOptions(options_), warnings),
      jit_({options_.max_jit_entries, options_.perf_map_dir, options_.max_jit_bytes}, warnings) {
  auto k = Kallsyms::Load();
  if (k.ok()) {
    kallsyms_ = std::move(*k);
  } else {
    warnings->Add(absl::StrCat("kernel symbols unavailable: ", k.status().message()));
  }
}

const std::string* IntervalSymbolizer::FirstFile(const LocatedMapping& m) const {
  const std::string& named = m.path == "[vdso]" ? options_.vdso_file : m.path;
  // Not files: memfd mappings ("/memfd:name (deleted)"), deleted files.
  if (named.empty() || named[0] != '/' || named.rfind("/memfd:", 0) == 0 ||
      (named.size() > 10 && named.compare(named.size() - 10, 10, " (deleted)") == 0)) {
    return nullptr;
  }
  if (!m.debug_file.empty()) return &m.debug_file;
  const std::string* file = m.path == "[vdso]" ? &named : &m.symbol_file;
  return file->empty() ? nullptr : file;
}

void IntervalSymbolizer::Prefetch(const IntervalProfile& p) {
  std::vector<std::pair<const std::string*, uint64_t>> todo;
  for (const LocatedFrame& f : p.frames) {
    if (f.mapping >= p.mappings.size()) continue;  // kernel, unmapped
    if (const std::string* file = FirstFile(p.mappings[f.mapping])) todo.emplace_back(file, f.addr);
  }
  std::sort(todo.begin(), todo.end(), [](const auto& a, const auto& b) {
    return *a.first != *b.first ? *a.first < *b.first : a.second < b.second;
  });
  const std::string* open = nullptr;
  for (const auto& [file, addr] : todo) {
    if (open != nullptr && *open != *file && options_.close_dwarf_sessions) symbols_.CloseSession(*open);
    symbols_.Lookup(*file, addr);
    open = file;
  }
}

ResolvedFrame IntervalSymbolizer::PythonFrameOf(const IntervalProfile& p, const LocatedFrame& f) {
  PythonFrameName n{p.strings[f.addr >> 32], p.strings[f.addr & UINT32_MAX],
                    static_cast<int32_t>(f.runtime & 0xfffff)};
  return PythonFrame(std::move(n), f.runtime >> 20);
}

ResolvedFrame IntervalSymbolizer::InterpreterLoopFrameOf(const IntervalProfile& p, const LocatedFrame& f) {
  if (f.mapping == LocatedFrame::kPython) return PythonFrameOf(p, f);
  InterpFrameName n;
  n.kind = static_cast<ehp_interp_kind>(f.runtime >> 62);
  n.function = p.strings[f.addr >> 32];
  n.file = p.strings[f.addr & UINT32_MAX];
  n.line = static_cast<int32_t>(f.runtime & 0xfffff);
  return InterpFrame(std::move(n), (f.runtime & ~(uint64_t{3} << 62)) >> 20);
}

void IntervalSymbolizer::AddUser(const IntervalProfile& p, const LocatedFrame& f,
                                 std::vector<ResolvedFrame>* out) {
  if (f.mapping == LocatedFrame::kJava) {
    JvmFrameName n;
    n.method = p.strings[f.addr >> 32];
    n.file = p.strings[f.addr & UINT32_MAX];
    n.line = static_cast<int32_t>(f.runtime & 0xfffff);
    n.inlined = ((f.runtime >> 20) & kJvmFrameInlined) != 0;
    out->push_back(JvmFrame(std::move(n), f.runtime >> 20));
    return;
  }
  if (f.mapping == LocatedFrame::kV8) {
    V8FrameName n{p.strings[f.addr >> 32], p.strings[f.addr & UINT32_MAX], static_cast<int32_t>(f.runtime & 0xfffff)};
    n.inlined = ((f.runtime >> 20) & kV8FrameInlined) != 0;
    DropUnnamedCodeFrame(out);
    out->push_back(V8Frame(std::move(n), f.runtime >> 20));
    return;
  }
  if (f.mapping == LocatedFrame::kAnon || f.mapping == LocatedFrame::kUnmapped) {
    out->push_back(jit_.Frame(static_cast<uint32_t>(f.addr), f.runtime, f.mapping == LocatedFrame::kAnon));
    return;
  }
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
  r.dso = m.path;
  r.map_start = m.start;
  r.map_limit = m.limit;
  r.map_offset = m.offset;
  const std::string& named = m.path == "[vdso]" ? options_.vdso_file : m.path;
  if (FirstFile(m) == nullptr) {  // not a file (memfd, deleted), or no file to read
    out->push_back(std::move(r));
    return;
  }
  // As ResolveSamples does: the debug file found in a container's root
  // first, the file itself for what that does not name (PLT stubs).
  // (An empty symbol_file: the path holds another file now and ehprof kept
  // no fd on the mapped one; its symbols would be wrong names.)
  const std::string* file = m.path == "[vdso]" ? &named : &m.symbol_file;
  if (!m.debug_file.empty() && !symbols_.Lookup(m.debug_file, f.addr).frames.empty()) file = &m.debug_file;
  if (file->empty()) {
    out->push_back(std::move(r));
    return;
  }
  const AddressSymbolizer::Symbolized& s = symbols_.Lookup(*file, f.addr);
  AppendSourceFrames(r, s.frames, s.start, out);
}

void IntervalSymbolizer::Resolve(const IntervalProfile& p, IntervalOutput* out,
                                 ServiceProfileBuilder::NameOf container_name) {
  // Between intervals only, so that what Prefetch finds stays.
  symbols_.NextRound();
  jit_.NextRound();
  Prefetch(p);
  ServiceProfileBuilder builder(options_.view, std::move(container_name));
  ResolvedSample s;  // one stack at a time: the profile keeps its ids
  for (const auto& [key, value] : p.counts) {
    s.comm = p.strings[key.comm];
    s.count = value.count;
    s.off_cpu = key.off_cpu();
    s.weight_ns = value.weight_ns;
    s.frames.clear();
    size_t kernel = 0;
    for (; kernel < key.frames.size() && p.frames[key.frames[kernel]].mapping == LocatedFrame::kKernel; ++kernel) {
      s.frames.push_back(KernelFrame(p.frames[key.frames[kernel]].addr, kallsyms_ ? &*kallsyms_ : nullptr));
    }
    if (s.off_cpu) DropTracingFrames(&s.frames);
    // As ResolveSamples orders them.
    AppendUserFrames(
        absl::MakeConstSpan(key.frames).subspan(kernel),
        [&](uint32_t id) {
          return p.frames[id].mapping == LocatedFrame::kPython || p.frames[id].mapping == LocatedFrame::kInterp;
        },
        [&](uint32_t id) { return InterpreterLoopFrameOf(p, p.frames[id]); },
        [&](uint32_t id, std::vector<ResolvedFrame>* out) { AddUser(p, p.frames[id], out); }, &s.frames);
    builder.Add(p.strings[key.service], s);
  }
  builder.Finish(out);
  if (options_.close_dwarf_sessions) symbols_.CloseSessions();
}

}  // namespace ehprof
