#include "agent/v8/v8_tracker.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/process/proc_maps.h"
#include "base/guarded.h"

namespace ehprof {

namespace {

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
    proc.binary = e.path;
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
    proc.text.clear();
    for (const MapsEntry& m : *maps) {
      if (m.exec && m.path == e.path && m.inode == e.inode) proc.text.emplace_back(m.start, m.end);
    }
    proc.state = Proc::kV8;
    if (!layout->code.readable) {
      warnings_->AddOnce(absl::StrCat(e.path, ":code"),
                         absl::StrCat(layout->code_problem, "; functions V8 inlined are not named"));
    }
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
  for (auto& [pid, p] : procs_) p.frame_index = {};
}

void V8Tracker::Notice(uint32_t pid, uint64_t now_ns) {
  Proc& p = procs_[pid];
  if (p.look.Due(p.state == Proc::kUnknown, p.state == Proc::kNotV8, now_ns)) {
    const absl::Status st = Guarded("reading a V8 process", "its JavaScript frames are not named", [&] {
      (void)Attach(pid);
      return absl::OkStatus();
    });
    if (!st.ok()) procs_[pid].state = Proc::kRefused;
  }
}

}  // namespace ehprof
