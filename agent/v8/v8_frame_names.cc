// V8Tracker's naming of the JavaScript frames of a sample (NameFrames) and
// the function table it names them into.
#include <signal.h>

#include <algorithm>

#include "agent/v8/v8_tracker.h"

namespace ehprof {

namespace {

// A function named is trusted this long before it is read again: the
// collector moves and frees SharedFunctionInfos, and another object may
// take the address.
constexpr uint64_t kRecheckNs = 100'000'000;
// A code object read is checked again after this long (V8 frees code and
// reuses its memory); a pc at which none was found is looked at again
// after a second (a scan may read 64 pages).
constexpr uint64_t kCodeRecheckNs = 10'000'000;
constexpr uint64_t kNoCodeRecheckNs = 1'000'000'000;
// Caches emptied when they grow past these.
constexpr size_t kMaxCodes = 4096;
constexpr size_t kMaxNoCode = 65536;
constexpr size_t kMaxBytecodeTables = 16384;

}  // namespace

V8FunctionTable::V8FunctionTable() { names_.push_back({"[v8 unknown]", "", -1}); }

uint32_t V8FunctionTable::Add(V8FrameName name) {
  if (names_.size() >= kV8FrameIndexMask) return 0;
  names_.push_back(std::move(name));
  return static_cast<uint32_t>(names_.size() - 1);
}

V8FrameName V8FunctionTable::Name(uint64_t value) const {
  const uint64_t index = value & kV8FrameIndexMask;
  V8FrameName n = index < names_.size() ? names_[index] : names_[0];
  n.inlined = (value & kV8FrameInlined) != 0;
  return n;
}

int32_t V8Tracker::LineOf(uint32_t pid, Proc& p, uint64_t script, int32_t position, uint64_t now_ns) {
  if (!script || position < 0) return -1;
  auto it = p.scripts.find(script);
  if (it == p.scripts.end() || now_ns - it->second.checked_ns >= kRecheckNs) {
    ProcessMemory mem(static_cast<pid_t>(pid));
    auto ends = V8Heap(mem, p.layout).ReadLineEnds(script);
    it = p.scripts.insert_or_assign(script, Proc::Lines{ends.ok() ? *std::move(ends) : std::vector<int32_t>{}, now_ns})
             .first;
  }
  const std::vector<int32_t>& ends = it->second.ends;
  if (ends.empty() || position > ends.back()) return -1;
  return static_cast<int32_t>(std::lower_bound(ends.begin(), ends.end(), position) - ends.begin()) + 1;
}

const V8Function* V8Tracker::Function(uint32_t pid, Proc& p, uint64_t sfi, uint64_t now_ns) {
  auto it = p.functions.find(sfi);
  if (it != p.functions.end() && now_ns - it->second.checked_ns < kRecheckNs) {
    return it->second.f ? &*it->second.f : nullptr;
  }
  ProcessMemory mem(static_cast<pid_t>(pid));
  auto f = V8Heap(mem, p.layout).ReadFunction(sfi);
  if (f.ok()) {
    p.functions[sfi] = {*std::move(f), now_ns};
  } else if (it == p.functions.end() || kill(static_cast<pid_t>(pid), 0) == 0) {
    // Gone from the process while it lives; a process that exited keeps the
    // names read for its last samples.
    p.functions[sfi] = {std::nullopt, now_ns};
  }
  const Proc::Function& cached = p.functions[sfi];
  return cached.f ? &*cached.f : nullptr;
}

uint32_t V8Tracker::FrameIndex(uint32_t pid, Proc& p, uint64_t sfi, int32_t script_offset, uint64_t now_ns) {
  const V8Function* f = Function(pid, p, sfi, now_ns);
  if (f == nullptr) return 0;
  const int32_t line = LineOf(pid, p, f->script_addr, script_offset >= 0 ? script_offset : f->start_position, now_ns);
  const std::pair<uint64_t, int32_t> key{sfi, line};
  auto it = p.frame_index.find(key);
  if (it != p.frame_index.end() && now_ns - it->second.checked_ns < kRecheckNs) return it->second.index;
  V8FrameName n{f->name.empty() ? "(anonymous)" : f->name, f->script, line};
  uint32_t index = 0;
  // The same name as before keeps its entry: the table grows with
  // functions and lines, not with rechecks.
  if (it != p.frame_index.end() && it->second.index != 0) {
    const V8FrameName& old = functions_.At(it->second.index);
    if (old.function == n.function && old.script == n.script) index = it->second.index;
  }
  if (index == 0) index = functions_.Add(std::move(n));
  p.frame_index[key] = {index, now_ns};
  return index;
}

const V8Code* V8Tracker::CodeAt(uint32_t pid, Proc& p, uint64_t pc, uint64_t now_ns) {
  if (!p.layout.code.readable) return nullptr;
  for (const auto& [begin, end] : p.text) {
    if (pc >= begin && pc < end) return nullptr;
  }
  ProcessMemory mem(static_cast<pid_t>(pid));
  V8CodeReader reader(mem, p.layout);
  auto it = p.codes.upper_bound(pc);
  if (it != p.codes.begin() && pc - (--it)->first < it->second.code->size) {
    if (now_ns - it->second.checked_ns < kCodeRecheckNs) return it->second.code.get();
    if (reader.Same(*it->second.code, p.istream_map)) {
      it->second.checked_ns = now_ns;
      return it->second.code.get();
    }
    p.codes.erase(it);
  }
  auto miss = p.no_code.find(pc);
  if (miss != p.no_code.end() && now_ns - miss->second < kNoCodeRecheckNs) return nullptr;
  auto code = reader.Find(pc, &p.istream_map);
  if (!code.ok()) {
    if (p.no_code.size() >= kMaxNoCode) p.no_code.clear();
    p.no_code[pc] = now_ns;
    return nullptr;
  }
  if (p.codes.size() >= kMaxCodes) p.codes.clear();
  // Code read before in the same range was freed: this one took its place.
  const uint64_t start = code->start, end = code->start + code->size;
  for (auto o = p.codes.lower_bound(start > (uint64_t{1} << 30) ? start - (uint64_t{1} << 30) : 0);
       o != p.codes.end() && o->first < end;) {
    o = o->first + o->second.code->size > start ? p.codes.erase(o) : std::next(o);
  }
  auto& slot = p.codes[start];
  slot = {std::make_shared<const V8Code>(*std::move(code)), now_ns};
  return slot.code.get();
}

int32_t V8Tracker::BytecodeScriptOffset(uint32_t pid, Proc& p, uint64_t sfi, uint32_t offset_slot, uint64_t now_ns) {
  // The slot holds the offset plus BytecodeArray's header, less its tag.
  const int64_t offset = int64_t{offset_slot} - (int64_t{p.layout.bytecode_header} - p.layout.proc.heap_object_tag);
  if (offset < 0 || !p.layout.code.readable) return -1;
  auto it = p.bytecode.find(sfi);
  if (it == p.bytecode.end() || now_ns - it->second.checked_ns >= kRecheckNs) {
    if (p.bytecode.size() >= kMaxBytecodeTables) p.bytecode.clear();
    ProcessMemory mem(static_cast<pid_t>(pid));
    auto table = V8CodeReader(mem, p.layout).BytecodePositions(sfi);
    it = p.bytecode.insert_or_assign(sfi, Proc::Positions{table.ok() ? *std::move(table) : std::vector<V8PositionEntry>{},
                                                           now_ns})
             .first;
  }
  const V8PositionEntry* e = V8PositionAt(it->second.table, static_cast<int32_t>(offset));
  return e ? e->position.script_offset : -1;
}

bool V8Tracker::Expand(uint32_t pid, Proc& p, uint64_t v, uint64_t pc_frame, uint64_t now_ns,
                       std::vector<uint64_t>* out) {
  // A return address: its call is the byte before it.
  const uint64_t pc = (pc_frame & EHP_FRAME_ADDR_MASK) - ((pc_frame & EHP_FRAME_EXACT) ? 0 : 1);
  const V8Code* code = CodeAt(pid, p, pc, now_ns);
  // Code of another function: the pc ran in a callee whose frame was not
  // made yet (its prologue), or the code was replaced.
  if (code == nullptr || !code->optimized || code->sfi != EHP_V8_FRAME_SFI(v)) return false;
  auto scopes = V8ScopesAt(*code, static_cast<int32_t>(pc - code->start));
  if (!scopes.ok()) return false;
  const size_t first = out->size();
  for (size_t i = 0; i < scopes->size(); ++i) {
    const uint32_t index = FrameIndex(pid, p, (*scopes)[i].sfi, (*scopes)[i].script_offset, now_ns);
    if (index == 0) {
      out->resize(first);
      return false;
    }
    const uint64_t inlined = i + 1 < scopes->size() ? kV8FrameInlined : 0;
    out->push_back((v & ~EHP_V8_SFI_MASK) | inlined | index);
  }
  return true;
}

void V8Tracker::NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user) {
  Notice(pid, now_ns);
  Proc& p = procs_[pid];
  std::vector<uint64_t> out;
  out.reserve(user->size());
  for (size_t i = 0; i < user->size(); ++i) {
    const uint64_t v = (*user)[i];
    const uint64_t sfi = EHP_V8_FRAME_SFI(v);
    if (!EHP_IS_V8_FRAME(v)) {
      out.push_back(v);
      continue;
    }
    if (p.state != Proc::kV8 || sfi == 0) {
      out.push_back(v & ~EHP_V8_SFI_MASK);
      continue;
    }
    const uint32_t slot = EHP_V8_FRAME_OFFSET(v);
    // The frame's pc is the native frame the walk pushed before it.
    if (slot == EHP_V8_OFFSET_UNKNOWN && i > 0 &&
        ((*user)[i - 1] & (EHP_FRAME_V8 | EHP_FRAME_JVM | EHP_FRAME_PYTHON | EHP_JVM_COMPILED)) == 0 &&
        Expand(pid, p, v, (*user)[i - 1], now_ns, &out)) {
      continue;
    }
    const int32_t at = slot == EHP_V8_OFFSET_UNKNOWN ? -1 : BytecodeScriptOffset(pid, p, sfi, slot, now_ns);
    out.push_back((v & ~EHP_V8_SFI_MASK) | FrameIndex(pid, p, sfi, at, now_ns));
  }
  *user = std::move(out);
}

}  // namespace ehprof
