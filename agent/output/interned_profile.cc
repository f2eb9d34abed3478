#include "agent/output/interned_profile.h"

#include <algorithm>
#include <cstdint>

#include "base/printable_text.h"

namespace ehprof {
namespace {

std::string_view OrUnknown(const std::string& s) { return s.empty() ? "[unknown]" : std::string_view(s); }

uint64_t StringBytes(const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; }

InternedProfile::Kind KindOf(const ResolvedFrame& f) {
  if (f.kernel) return InternedProfile::Kind::kKernel;
  if (f.runtime != FrameRuntime::kNone) return InternedProfile::Kind::kNative;
  return f.jit ? InternedProfile::Kind::kJit : InternedProfile::Kind::kNative;
}

}  // namespace

uint64_t InternedProfile::Bytes() const {
  uint64_t n = strings.capacity() * sizeof(std::string) + mappings.capacity() * sizeof(Mapping) +
               functions.capacity() * sizeof(Function) + lines.capacity() * sizeof(Line) +
               locations.capacity() * sizeof(Location) + samples.capacity() * sizeof(Sample) +
               events.capacity() * sizeof(Event);
  for (const std::string& s : strings) n += StringBytes(s);
  for (const Sample& s : samples) {
    n += s.locations.capacity() * sizeof(uint32_t) + s.labels.capacity() * sizeof(s.labels[0]);
  }
  return n;
}

std::vector<std::string_view> FunctionNames(const InternedProfile& p, const InternedProfile::Sample& s) {
  std::vector<std::string_view> out;
  for (uint32_t id : s.locations) {
    const InternedProfile::Location& loc = p.locations[id];
    for (uint32_t l = loc.first_line; l < loc.first_line + loc.num_lines; ++l) {
      out.push_back(p.strings[p.functions[p.lines[l].function].name]);
    }
  }
  return out;
}

FrameView::FrameView(const ResolvedFrame& f)
    : symbol(f.symbol), dso(f.dso), src_file(f.src_file), addr(f.addr), symbol_start(f.symbol_start),
      line(f.line), kernel(f.kernel), inlined(f.inlined), jit(f.jit), runtime(f.runtime) {}

std::vector<FrameView> Frames(const InternedProfile& p, const InternedProfile::Sample& s) {
  std::vector<FrameView> out;
  for (uint32_t id : s.locations) {
    const InternedProfile::Location& loc = p.locations[id];
    const InternedProfile::Mapping& m = p.mappings[loc.mapping];
    for (uint32_t l = loc.first_line; l < loc.first_line + loc.num_lines; ++l) {
      const InternedProfile::Line& line = p.lines[l];
      FrameView& f = out.emplace_back();
      f.symbol = p.strings[p.functions[line.function].name];
      f.dso = p.strings[m.dso];
      f.src_file = p.strings[line.file];
      f.addr = loc.elf_address;
      f.line = line.line;
      f.inlined = l + 1 < loc.first_line + loc.num_lines;
      if (!f.inlined) f.symbol_start = loc.symbol_start;
      f.kernel = loc.kind == InternedProfile::Kind::kKernel;
      f.jit = loc.kind == InternedProfile::Kind::kJit;
      f.runtime = loc.runtime;
    }
  }
  return out;
}

std::vector<InternedProfile::Event> EventsOf(const InternedProfile& p) {
  if (!p.events.empty() || p.samples.empty()) {
    // Arrival is not time order: each CPU's samples come in their own order,
    // and a walk finished late (agent/deferred) arrives after later samples.
    // perf script prints in time order, and readers rely on it (speedscope
    // throws "Timestamps received out of order" and imports nothing).
    std::vector<InternedProfile::Event> sorted = p.events;
    std::stable_sort(sorted.begin(), sorted.end(),
                     [](const InternedProfile::Event& a, const InternedProfile::Event& b) {
                       return a.time_ns < b.time_ns;
                     });
    return sorted;
  }
  std::vector<InternedProfile::Event> out;
  out.reserve(p.samples.size());
  for (uint32_t i = 0; i < p.samples.size(); ++i) {
    out.push_back({i, 0, 0, p.samples[i].count, p.samples[i].weight_ns});
  }
  return out;
}

InternedProfile BuildProfile(const std::vector<ResolvedSample>& samples, bool keep_events) {
  ProfileBuilder builder(keep_events);
  for (const ResolvedSample& s : samples) builder.Add(s);
  return builder.Take();
}

// Every string of every profile comes in here, and most of them are a
// process's own (comms, paths, Python and JIT names, symbols from its
// files, cgroup names): each is made printable (base/printable_text.h) on
// the way in, so no writer, push or export ever sees one that is not.
// Clean text is checked once, when it is first interned.
uint32_t ProfileBuilder::String(std::string_view s) {
  if (s.empty()) return 0;
  auto it = string_index_.find(s);
  if (it != string_index_.end()) return it->second;
  if (!IsPrintableText(s)) return String(PrintableText(s));
  const auto id = static_cast<uint32_t>(string_store_.size() + 1);
  const std::string& kept = string_store_.emplace_back(s);
  string_index_.emplace(std::string_view(kept), id);
  return id;
}

// One per file and place it was mapped at: a file mapped by several
// processes at different addresses is several mappings.
uint32_t ProfileBuilder::MappingId(const ResolvedFrame& f) {
  const uint32_t dso = String(OrUnknown(f.dso));
  auto [it, inserted] = mapping_index_.try_emplace(std::make_tuple(dso, f.map_start, f.map_limit, f.map_offset),
                                                   static_cast<uint32_t>(p_.mappings.size()));
  if (inserted) p_.mappings.push_back({dso, f.map_start, f.map_limit, f.map_offset, f.kernel});
  return it->second;
}

// Keyed by dso too: the same name in two files (static functions, two
// copies of an inline function) is two functions.
uint32_t ProfileBuilder::FunctionId(const ResolvedFrame& f) {
  const uint32_t name = String(OrUnknown(f.symbol)), dso = String(OrUnknown(f.dso));
  auto [it, inserted] =
      function_index_.try_emplace(std::make_pair(name, dso), static_cast<uint32_t>(p_.functions.size()));
  if (inserted) p_.functions.push_back({name, dso, 0});
  InternedProfile::Function& fn = p_.functions[it->second];
  if (fn.file == 0 && !f.src_file.empty()) fn.file = String(f.src_file);
  return it->second;
}

// Keyed by the inline chain as well as the address: one address always
// resolves to one chain in practice, but if it did not, merging would
// silently attribute samples to the wrong function.
uint32_t ProfileBuilder::LocationId(const ResolvedFrame& base, std::vector<InternedProfile::Line> lines) {
  const uint32_t mapping = MappingId(base);
  const uint64_t address = base.runtime_addr != 0 ? base.runtime_addr : base.addr;
  auto key = std::make_tuple(mapping, address, std::move(lines));
  auto it = location_index_.find(key);
  if (it != location_index_.end()) return it->second;
  const auto id = static_cast<uint32_t>(p_.locations.size());
  const std::vector<InternedProfile::Line>& l = std::get<2>(key);
  p_.locations.push_back({mapping, address, base.addr, base.symbol_start, static_cast<uint32_t>(p_.lines.size()),
                          static_cast<uint32_t>(l.size()), KindOf(base), base.kernel ? FrameRuntime::kNone : base.runtime});
  p_.lines.insert(p_.lines.end(), l.begin(), l.end());
  location_index_.emplace(std::move(key), id);
  return id;
}

std::pair<uint32_t, bool> ProfileBuilder::Add(const ResolvedSample& s,
                                              const std::vector<std::pair<uint32_t, uint32_t>>& extra_labels) {
  if (s.count == 0) return {UINT32_MAX, false};
  std::vector<uint32_t> locations;
  const std::vector<const ResolvedFrame*> frames = ShownFrames(s.frames, view_);
  for (size_t i = 0; i < frames.size();) {
    // frames[i..end) is one Location: a run of inline expansions and the
    // frame they expand (the first one not marked inlined).
    size_t end = i;
    while (end + 1 < frames.size() && frames[end]->inlined) ++end;
    ++end;
    std::vector<InternedProfile::Line> lines;
    lines.reserve(end - i);
    for (size_t j = i; j < end; ++j) {
      lines.push_back({FunctionId(*frames[j]), frames[j]->line, String(frames[j]->src_file)});
    }
    locations.push_back(LocationId(*frames[end - 1], std::move(lines)));
    i = end;
  }
  std::vector<std::pair<uint32_t, uint32_t>> labels;
  labels.reserve(s.labels.size() + extra_labels.size());
  for (const auto& [k, v] : s.labels) labels.emplace_back(String(k), String(v));
  labels.insert(labels.end(), extra_labels.begin(), extra_labels.end());
  const uint32_t comm = String(s.comm);
  SampleKey key{locations, comm, s.pid, s.tid, labels, s.off_cpu};
  auto [it, inserted] = sample_index_.try_emplace(std::move(key), static_cast<uint32_t>(p_.samples.size()));
  if (inserted) {
    p_.samples.push_back({std::move(locations), comm, s.pid, s.tid, std::move(labels), 0, 0, s.off_cpu});
  }
  InternedProfile::Sample& out = p_.samples[it->second];
  // Saturating: the writers say when a value is out of their range.
  if (__builtin_add_overflow(out.count, s.count, &out.count)) out.count = UINT64_MAX;
  if (__builtin_add_overflow(out.weight_ns, s.weight_ns, &out.weight_ns)) out.weight_ns = UINT64_MAX;
  if (keep_events_) p_.events.push_back({it->second, s.cpu, s.time_ns, s.count, s.weight_ns});
  return {it->second, inserted};
}

InternedProfile ProfileBuilder::Take() {
  string_index_.clear();
  for (std::string& s : string_store_) p_.strings.push_back(std::move(s));
  string_store_.clear();
  InternedProfile out = std::move(p_);
  p_ = InternedProfile();
  mapping_index_.clear();
  function_index_.clear();
  location_index_.clear();
  sample_index_.clear();
  return out;
}

}  // namespace ehprof
