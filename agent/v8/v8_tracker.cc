#include "agent/v8/v8_tracker.h"

#include <signal.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/process/proc_maps.h"
#include "base/guarded.h"

namespace ehprof {

namespace {

// A function named is trusted this long before it is read again: the
// collector moves and frees SharedFunctionInfos, and another object may
// take the address.
constexpr uint64_t kRecheckNs = 100'000'000;
// A process that is not (yet) V8 is looked at again after 10 ms, then twice
// as long each time up to a second (node maps itself at exec, a libnode user
// may load it later).
constexpr uint64_t kNotV8FirstRetryNs = 10'000'000;
constexpr uint64_t kNotV8RetryNs = 1'000'000'000;

// Only files named like node's are opened: reading every executable's
// symbol table would cost every process a scan.
bool LooksLikeV8(const std::string& path) {
  const std::string base = path.substr(path.rfind('/') + 1);
  return absl::StartsWith(base, "node") || absl::StartsWith(base, "libnode");
}

std::optional<uint64_t> BiasOf(const V8Binary& b, const MapsEntry& e) {
  for (const ElfSegment& seg : b.loads) {
    if (e.offset >= (seg.offset & ~uint64_t{4095}) && e.offset < seg.offset + seg.filesz) {
      return e.start - (e.offset + seg.vaddr - seg.offset);
    }
  }
  return std::nullopt;
}

}  // namespace

V8FunctionTable::V8FunctionTable() { names_.push_back({"[v8 unknown]", "", -1}); }

uint32_t V8FunctionTable::Add(V8FrameName name) {
  if (names_.size() >= EHP_V8_SFI_MASK) return 0;
  names_.push_back(std::move(name));
  return static_cast<uint32_t>(names_.size() - 1);
}

V8FrameName V8FunctionTable::Name(uint64_t value) const {
  const uint64_t index = value & EHP_V8_SFI_MASK;
  return index < names_.size() ? names_[index] : names_[0];
}

const absl::StatusOr<std::optional<V8Binary>>& V8Tracker::Binary(const std::string& open_path,
                                                                 const std::string& path, uint64_t inode) {
  const std::string key = absl::StrCat(path, ":", inode);
  auto it = binaries_.find(key);
  if (it != binaries_.end()) return it->second;
  absl::StatusOr<std::optional<V8Binary>> result = std::nullopt;
  auto elf = ElfFile::Open(open_path);
  if (elf.ok()) result = InspectV8Binary(*elf, path);
  return binaries_.emplace(key, std::move(result)).first->second;
}

absl::StatusOr<bool> V8Tracker::Attach(uint32_t pid) {
  Proc& proc = procs_[pid];
  auto maps = ReadProcMaps(static_cast<int>(pid));
  if (!maps.ok()) return maps.status();
  for (const MapsEntry& e : *maps) {
    if (!e.exec || e.path.empty() || e.path[0] != '/' || !LooksLikeV8(e.path)) continue;
    const std::string open = absl::StrFormat("/proc/%d/map_files/%x-%x", pid, e.start, e.end);
    const auto& bin = Binary(open, e.path, e.inode);
    auto refuse = [&](std::string why) -> absl::StatusOr<bool> {
      warnings_->AddOnce(e.path, absl::StrCat(why, "; its JavaScript frames are not named"));
      proc.state = Proc::kRefused;
      return absl::FailedPreconditionError(why);
    };
    if (!bin.ok()) return refuse(std::string(bin.status().message()));
    if (!*bin) continue;
    auto bias = BiasOf(**bin, e);
    if (!bias) return refuse(absl::StrCat(e.path, ": its mapping lies in no segment"));
    auto layout = ReadV8Layout(ProcessMemory(static_cast<pid_t>(pid)), **bin, *bias);
    if (!layout.ok()) return refuse(std::string(layout.status().message()));
    if (absl::Status st = v8_procs_ ? v8_procs_->Write(pid, &layout->proc, 1) : absl::OkStatus(); !st.ok()) {
      warnings_->AddOnce("v8_procs", absl::IsResourceExhausted(st)
                                         ? absl::StrCat("V8 processes: the BPF map is full (", pid, ")")
                                         : absl::StrCat("V8 processes: ", st.message()));
      return false;
    }
    proc.layout = *layout;
    proc.state = Proc::kV8;
    return true;
  }
  proc.state = Proc::kNotV8;
  return false;
}

void V8Tracker::Exit(uint32_t pid) {
  auto it = procs_.find(pid);
  if (it == procs_.end()) return;
  if (it->second.state == Proc::kV8 && v8_procs_) v8_procs_->Delete(pid);
  procs_.erase(it);
}

void V8Tracker::ForgetFunctions() {
  functions_ = V8FunctionTable();
  for (auto& [pid, p] : procs_) p.function_index = {};
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

uint32_t V8Tracker::FunctionIndex(uint32_t pid, Proc& p, uint64_t sfi, uint64_t now_ns) {
  auto it = p.function_index.find(sfi);
  if (it != p.function_index.end() && now_ns - it->second.checked_ns < kRecheckNs) return it->second.index;
  ProcessMemory mem(static_cast<pid_t>(pid));
  auto f = V8Heap(mem, p.layout).ReadFunction(sfi);
  uint32_t index = 0;
  if (f.ok()) {
    V8FrameName n{f->name.empty() ? "(anonymous)" : f->name, f->script,
                  LineOf(pid, p, f->script_addr, f->start_position, now_ns)};
    // The same name as before keeps its entry: the table grows with
    // functions, not with rechecks.
    if (it != p.function_index.end() && it->second.index != 0) {
      const V8FrameName old = functions_.Name(it->second.index);
      if (old.function == n.function && old.script == n.script && old.line == n.line) index = it->second.index;
    }
    if (index == 0) index = functions_.Add(std::move(n));
  } else if (it != p.function_index.end() && kill(static_cast<pid_t>(pid), 0) != 0) {
    index = it->second.index;  // the process is gone: its last samples keep the names read
  }
  p.function_index[sfi] = {index, now_ns};
  return index;
}

void V8Tracker::Notice(uint32_t pid, uint64_t now_ns) {
  Proc& p = procs_[pid];
  const uint64_t retry = std::min(kNotV8RetryNs, kNotV8FirstRetryNs << std::min(p.not_v8_checks, 7));
  if (p.state == Proc::kUnknown || (p.state == Proc::kNotV8 && now_ns - p.checked_ns > retry)) {
    if (p.state == Proc::kNotV8) ++p.not_v8_checks;
    p.checked_ns = now_ns;
    const absl::Status st = Guarded("reading a V8 process", "its JavaScript frames are not named", [&] {
      (void)Attach(pid);
      return absl::OkStatus();
    });
    if (!st.ok()) procs_[pid].state = Proc::kRefused;
  }
}

void V8Tracker::NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user) {
  Notice(pid, now_ns);
  Proc& p = procs_[pid];
  for (uint64_t& v : *user) {
    if (!EHP_IS_V8_FRAME(v)) continue;
    const uint64_t sfi = EHP_V8_FRAME_SFI(v);
    const uint32_t index = p.state == Proc::kV8 && sfi ? FunctionIndex(pid, p, sfi, now_ns) : 0;
    v = (v & ~EHP_V8_SFI_MASK) | index;
  }
}

}  // namespace ehprof
