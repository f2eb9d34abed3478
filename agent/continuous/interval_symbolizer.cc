#include "agent/continuous/interval_symbolizer.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "agent/resolve/profile_resolver.h"
#include "symbolizer/demangle.h"

namespace ehprof {

namespace {

uint64_t StringBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

// The heap a cached entry holds beyond its slot in the table.
uint64_t FramesBytes(const std::vector<Symbolizer::SourceFrame>& frames) {
  uint64_t n = frames.capacity() * sizeof(Symbolizer::SourceFrame);
  for (const auto& f : frames) n += StringBytes(f.function) + StringBytes(f.file);
  return n;
}

}  // namespace

IntervalSymbolizer::IntervalSymbolizer(Options options) : options_(std::move(options)) {
  auto k = Kallsyms::Load();
  if (k.ok()) {
    kallsyms_ = std::move(*k);
  } else {
    warnings_.push_back(absl::StrCat("kernel symbols unavailable: ", k.status().message()));
  }
  names_ = std::make_shared<SymbolCache>();
  dwarf_ = std::make_unique<DwarfSymbolizer>(names_);
  dwarf_->SetMaxExpandedDwarf(options_.max_expanded_dwarf);
}

uint32_t IntervalSymbolizer::FileId(const std::string& path) {
  auto [it, inserted] = file_ids_.try_emplace(path, next_file_id_);
  if (inserted) {
    // Beyond max_files, the least recently used file's data goes.
    while (files_.size() >= options_.max_files) {
      uint32_t oldest = UINT32_MAX;
      for (const auto& [id, f] : files_) {
        if (oldest == UINT32_MAX || f.last_used < files_[oldest].last_used) oldest = id;
      }
      Evict(oldest);
    }
    files_[next_file_id_++].path = path;
  }
  return it->second;
}

void IntervalSymbolizer::Evict(uint32_t id) {
  auto it = files_.find(id);
  if (it == files_.end()) return;
  for (std::string& w : dwarf_->TakeWarnings()) warnings_.push_back(std::move(w));
  bytes_evicted_ += names_->FileBytes(it->second.path);
  dwarf_->Evict(it->second.path);
  ++files_evicted_;
  file_ids_.erase(it->second.path);
  files_.erase(it);
}

std::pair<size_t, uint64_t> IntervalSymbolizer::EvictFor(uint64_t bytes) {
  std::vector<std::pair<uint64_t, uint32_t>> by_age;  // (last used, id)
  for (const auto& [id, f] : files_) {
    if (f.last_used < resolve_calls_) by_age.emplace_back(f.last_used, id);
  }
  std::sort(by_age.begin(), by_age.end());
  const uint64_t evicted_before = bytes_evicted_;
  size_t n = 0;
  for (const auto& [used, id] : by_age) {
    if (bytes_evicted_ - evicted_before >= bytes) break;
    Evict(id);
    ++n;
  }
  return {n, bytes_evicted_ - evicted_before};
}

IntervalSymbolizer::Usage IntervalSymbolizer::usage() const {
  Usage u;
  u.files = files_.size();
  for (const auto& [id, f] : files_) {
    const uint64_t bytes = names_->FileBytes(f.path);
    u.symbol_bytes += bytes;
    u.largest.emplace_back(f.path, bytes);
  }
  std::sort(u.largest.begin(), u.largest.end(),
            [](const auto& a, const auto& b) { return a.second > b.second; });
  if (u.largest.size() > 3) u.largest.resize(3);
  u.addresses = current_.size() + previous_.size();
  u.address_bytes = current_bytes_ + previous_bytes_;
  u.files_evicted = files_evicted_;
  u.bytes_evicted = bytes_evicted_;
  return u;
}

const IntervalSymbolizer::Symbolized& IntervalSymbolizer::Lookup(const std::string& file,
                                                                  uint64_t vaddr) {
  const uint32_t id = FileId(file);
  File& f = files_[id];
  f.last_used = resolve_calls_;
  auto key = std::make_pair(id, vaddr);
  if (auto it = current_.find(key); it != current_.end()) return it->second;
  if (auto it = previous_.find(key); it != previous_.end()) {
    current_bytes_ += sizeof(Cache::value_type) + FramesBytes(it->second.frames);
    return current_.emplace(key, std::move(it->second)).first->second;
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
    for (auto& fr : s.frames) fr.function = Demangle(fr.function);
  }
  current_bytes_ += sizeof(Cache::value_type) + FramesBytes(s.frames);
  return current_.emplace(std::move(key), std::move(s)).first->second;
}

void IntervalSymbolizer::CloseSession(const File& f) { dwarf_->CloseSession(f.path); }

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
    if (open != nullptr && *open != *file && options_.close_dwarf_sessions) {
      if (auto it = file_ids_.find(*open); it != file_ids_.end()) CloseSession(files_[it->second]);
    }
    Lookup(*file, addr);
    open = file;
  }
}

ResolvedFrame IntervalSymbolizer::PythonFrameOf(const IntervalProfile& p, const LocatedFrame& f) {
  PythonFrameName n{p.strings[f.addr >> 32], p.strings[f.addr & UINT32_MAX],
                    static_cast<int32_t>(f.runtime & 0xfffff)};
  return PythonFrame(std::move(n), f.runtime >> 20);
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
  if (FirstFile(m) == nullptr) {  // not a file (memfd, deleted), or no file to read
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

void IntervalSymbolizer::Resolve(const IntervalProfile& p, IntervalOutput* out) {
  ++resolve_calls_;
  // Retired between intervals only, so that what Prefetch found stays.
  if (current_bytes_ >= options_.address_cache_bytes) {
    previous_ = std::move(current_);
    previous_bytes_ = current_bytes_;
    current_ = Cache();
    current_bytes_ = 0;
  }
  Prefetch(p);
  ServiceProfileBuilder builder;
  ResolvedSample s;  // one stack at a time: the profile keeps its ids
  for (const auto& [key, value] : p.counts) {
    s.comm = p.strings[key.comm];
    s.count = value.count;
    s.off_cpu = key.off_cpu;
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
        [&](uint32_t id) { return p.frames[id].mapping == LocatedFrame::kPython; },
        [&](uint32_t id) { return PythonFrameOf(p, p.frames[id]); },
        [&](uint32_t id, std::vector<ResolvedFrame>* out) { AddUser(p, p.frames[id], out); }, &s.frames);
    builder.Add(p.strings[key.service], s);
  }
  builder.Finish(out);
  if (options_.close_dwarf_sessions) {
    for (auto& [id, f] : files_) CloseSession(f);
  }
}

std::vector<std::string> IntervalSymbolizer::TakeWarnings() {
  for (std::string& w : dwarf_->TakeWarnings()) warnings_.push_back(std::move(w));
  return std::exchange(warnings_, {});
}

}  // namespace ehprof
