#include "agent/continuous/interval_profile.h"

#include <utility>

#include "agent/resolve/profile_resolver.h"

namespace ehprof {

uint32_t StackAggregator::String(const std::string& s) {
  auto [it, inserted] = string_ids_.try_emplace(s, static_cast<uint32_t>(cur_.strings.size()));
  if (inserted) cur_.strings.push_back(s);
  return it->second;
}

uint32_t StackAggregator::Frame(const LocatedFrame& f) {
  auto [it, inserted] = frame_ids_.try_emplace(f, static_cast<uint32_t>(cur_.frames.size()));
  if (inserted) cur_.frames.push_back(f);
  return it->second;
}

uint32_t StackAggregator::Mapping(const TrackedMapping& m) {
  // Two containers' files may share a path (and an address): the kept fd
  // tells them apart.
  auto [it, inserted] =
      mapping_ids_.try_emplace(std::make_tuple(m.path, m.start, m.offset, m.kept_path),
                               static_cast<uint32_t>(cur_.mappings.size()));
  if (inserted) {
    cur_.mappings.push_back(
        {m.path, m.start, m.end, m.offset, m.build_id, SymbolFileOf(m), m.debug_path});
  }
  return it->second;
}

void StackAggregator::Add(const RawSample& s, const ProcessTracker& tracker, const std::string& service,
                          const PythonCodeTable* python) {
  ++cur_.samples;
  if (cur_.start_ns == 0) cur_.start_ns = s.time_ns;
  IntervalProfile::Key key;
  key.service = String(service);
  key.comm = String(s.comm);
  key.off_cpu = (s.flags & EHP_SAMPLE_OFF_CPU) != 0;
  key.frames.reserve(s.kernel.size() + s.user.size());
  for (uint64_t addr : s.kernel) {
    key.frames.push_back(Frame({LocatedFrame::kKernel, addr, addr}));
  }
  for (uint64_t value : s.user) {
    if (IsPythonFrame(value)) {
      // Named now: the code table is emptied between intervals.
      const ResolvedFrame f = PythonFrame(value, python);
      const uint64_t names = uint64_t{String(f.symbol)} << 32 | String(f.src_file);
      key.frames.push_back(Frame({LocatedFrame::kPython, names, f.addr}));
      continue;
    }
    const uint64_t addr = value & EHP_FRAME_ADDR_MASK;
    // Return addresses are symbolized at the call site.
    const uint64_t site = (value & EHP_FRAME_EXACT) ? addr : addr - 1;
    LocatedFrame f{LocatedFrame::kUnmapped, site, site};
    if (auto r = tracker.Resolve(s.pid, s.time_ns, site)) {
      f.mapping = Mapping(*r->mapping);
      f.addr = r->elf_vaddr;
    }
    key.frames.push_back(Frame(f));
  }
  auto it = cur_.counts.find(key);
  if (it != cur_.counts.end()) {
    ++it->second.count;
    it->second.weight_ns += s.off_cpu_ns;
  } else if (cur_.counts.size() < max_stacks_) {
    cur_.counts.emplace(std::move(key), IntervalProfile::Value{1, s.off_cpu_ns});
  } else {
    ++cur_.dropped;
  }
}

uint64_t IntervalProfile::Bytes() const {
  const auto str = [](const std::string& s) -> uint64_t { return s.capacity() > 15 ? s.capacity() + 1 : 0; };
  uint64_t n = strings.capacity() * sizeof(std::string) + mappings.capacity() * sizeof(LocatedMapping) +
               frames.capacity() * sizeof(LocatedFrame) +
               counts.capacity() * (sizeof(std::pair<const Key, Value>) + 1);
  for (const std::string& s : strings) n += str(s);
  for (const LocatedMapping& m : mappings) {
    n += str(m.path) + str(m.build_id) + str(m.symbol_file) + str(m.debug_file);
  }
  for (const auto& [key, value] : counts) n += key.frames.capacity() * sizeof(uint32_t);
  return n;
}

IntervalProfile StackAggregator::Take(uint64_t now_ns) {
  IntervalProfile out = std::move(cur_);
  out.end_ns = now_ns;
  cur_ = IntervalProfile();
  cur_.start_ns = now_ns;
  string_ids_.clear();
  frame_ids_.clear();
  mapping_ids_.clear();
  return out;
}

}  // namespace ehprof
