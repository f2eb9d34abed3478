#include "agent/continuous/interval_profile.h"

#include <utility>

#include "agent/resolve/profile_resolver.h"

namespace ehprof {

uint32_t StackAggregator::Mapping(const TrackedMapping& m) {
  // Two containers' files may share a path (and an address): the kept fd
  // tells them apart.
  auto [it, inserted] = mapping_ids_.try_emplace(std::make_tuple(m.path, m.start, m.offset, m.kept_path),
                                                 static_cast<uint32_t>(mappings_.size()));
  if (inserted) {
    mappings_.push_back({m.path, m.start, m.end, m.offset, m.build_id, SymbolFileOf(m), m.debug_path});
  }
  return it->second;
}

LocatedFrame StackAggregator::Located(const FrameLocation& l, uint32_t pid) {
  switch (l.kind) {
    case FrameLocation::Kind::kFile:
      return {Mapping(*l.mapping), l.elf_vaddr, l.site};
    case FrameLocation::Kind::kAnon:
      return {LocatedFrame::kAnon, pid, l.site};
    case FrameLocation::Kind::kUnmapped:
      break;
  }
  return {LocatedFrame::kUnmapped, pid, l.site};
}

void StackAggregator::Add(const RawSample& s, const ProcessTracker& tracker, const std::string& service,
                          const PythonCodeTable* python, const JvmMethodTable* jvm, const V8FunctionTable* v8,
                          const InterpFrameTable* interp) {
  ++samples_;
  if (start_ns_ == 0) start_ns_ = s.time_ns;
  StackKey key;
  key.service = stacks_.String(service);
  key.comm = stacks_.String(s.comm);
  key.flags = s.flags & EHP_SAMPLE_OFF_CPU;
  key.n_kernel = static_cast<uint16_t>(s.kernel.size());
  key.n_user = static_cast<uint16_t>(s.user.size());
  key.frames.reserve(s.kernel.size() + s.user.size());
  for (uint64_t addr : s.kernel) {
    key.frames.push_back(stacks_.FrameId({LocatedFrame::kKernel, addr, addr}));
  }
  for (uint64_t value : s.user) {
    if (IsPythonFrame(value)) {
      // Named now: the code table is emptied between intervals.
      const ResolvedFrame f = PythonFrame(value, python);
      const uint64_t names = uint64_t{stacks_.String(f.symbol)} << 32 | stacks_.String(f.src_file);
      key.frames.push_back(stacks_.FrameId({LocatedFrame::kPython, names, f.addr}));
      continue;
    }
    if (IsInterpFrame(value)) {
      const ResolvedFrame f = InterpFrame(value, interp);
      const uint64_t names = uint64_t{stacks_.String(f.symbol)} << 32 | stacks_.String(f.src_file);
      const uint64_t kind = EHP_INTERP_FRAME_KIND(value);
      key.frames.push_back(stacks_.FrameId({LocatedFrame::kInterp, names, kind << 62 | f.addr}));
      continue;
    }
    if (IsJvmFrame(value) || IsV8Frame(value)) {
      const bool java = IsJvmFrame(value);
      const ResolvedFrame f = java ? JvmFrame(value, jvm) : V8Frame(value, v8);
      const uint64_t names = uint64_t{stacks_.String(f.symbol)} << 32 | stacks_.String(f.src_file);
      key.frames.push_back(stacks_.FrameId({java ? LocatedFrame::kJava : LocatedFrame::kV8, names, f.addr}));
      continue;
    }
    const LocatedFrame f = Located(LocateUserFrame(tracker, s.pid, s.time_ns, value), s.pid);
    const uint32_t id = stacks_.FrameId(f);
    if (f.mapping == LocatedFrame::kUnmapped) unmapped_.try_emplace(id, s.time_ns);
    key.frames.push_back(id);
  }
  stacks_.Add(std::move(key), s.off_cpu_ns, s.time_ns, s.cpu);
}

uint64_t IntervalProfile::Bytes() const {
  const auto str = [](const std::string& s) -> uint64_t { return s.capacity() > 15 ? s.capacity() + 1 : 0; };
  uint64_t n = Stacks<LocatedFrame>::Bytes() + mappings.capacity() * sizeof(LocatedMapping);
  for (const LocatedMapping& m : mappings) {
    n += str(m.path) + str(m.build_id) + str(m.symbol_file) + str(m.debug_file);
  }
  return n;
}

IntervalProfile StackAggregator::Take(uint64_t now_ns, const ProcessTracker* tracker) {
  IntervalProfile out;
  static_cast<Stacks<LocatedFrame>&>(out) = stacks_.Take();
  // The tracker has read the maps the samples asked for since: a frame's
  // id stays, what it holds is its place now known (two ids may then hold
  // one place; their stacks resolve alike and merge in the output).
  if (tracker != nullptr) {
    for (const auto& [id, time_ns] : unmapped_) {
      LocatedFrame& f = out.frames[id];
      const auto pid = static_cast<uint32_t>(f.addr);
      f = Located(LocateSite(*tracker, pid, time_ns, f.runtime), pid);
    }
  }
  unmapped_.clear();
  out.start_ns = start_ns_;
  out.end_ns = now_ns;
  out.samples = std::exchange(samples_, 0);
  out.mappings = std::exchange(mappings_, {});
  start_ns_ = now_ns;
  mapping_ids_.clear();
  return out;
}

}  // namespace ehprof
