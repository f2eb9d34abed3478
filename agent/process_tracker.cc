#include "agent/process_tracker.h"

#include <bpf/bpf.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/auxv.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/proc_maps.h"
#include "unwind_tables/abi_checks.h"

namespace ehprof {
namespace {

// ELF vaddr = addr - bias for the PT_LOAD that file offset `offset` falls
// in; without program headers, assume the mapping starts at vaddr offset.
uint64_t LoadBias(const MapsEntry& e, const std::vector<ElfSegment>& loads) {
  for (const ElfSegment& s : loads) {
    const uint64_t seg_start = s.offset & ~uint64_t{0xfff};
    if (e.offset >= seg_start && e.offset < s.offset + s.filesz) {
      return e.start - e.offset - (s.vaddr - s.offset);
    }
  }
  return e.start - e.offset;
}

}  // namespace

std::vector<uint8_t> ReadOwnVdso() {
  const uint64_t base = getauxval(AT_SYSINFO_EHDR);
  if (!base) return {};
  auto maps = ReadProcMaps(static_cast<int>(getpid()));
  if (!maps.ok()) return {};
  for (const MapsEntry& e : *maps) {
    if (e.start == base && e.path == "[vdso]") {
      const auto* p = reinterpret_cast<const uint8_t*>(base);
      return std::vector<uint8_t>(p, p + (e.end - e.start));
    }
  }
  return {};
}

ProcessTracker::ProcessTracker(FileTables* files, int procs_map_fd)
    : files_(files), procs_fd_(procs_map_fd) {}

absl::Status ProcessTracker::Refresh(uint32_t pid, uint64_t now_ns) {
  auto maps = ReadProcMaps(static_cast<int>(pid));
  if (!maps.ok()) return maps.status();
  Snapshot snap;
  snap.from_ns = now_ns;
  for (const MapsEntry& e : *maps) {
    if (!e.exec || e.path == "[vsyscall]") continue;
    TrackedMapping m;
    m.start = e.start;
    m.end = e.end;
    absl::StatusOr<FileKey> key = absl::NotFoundError("anonymous");
    if (e.path == "[vdso]") {
      if (vdso_image_.empty()) vdso_image_ = ReadOwnVdso();
      if (!vdso_image_.empty()) key = files_->Register("", "[vdso]", vdso_image_);
      m.path = "[vdso]";
    } else if (e.path.empty() || e.path[0] == '[') {
      m.path = "//anon";  // JIT or other generated code: frame pointers only
    } else {
      m.path = e.path;
      // map_files reaches the mapped file even when deleted or inside a
      // container's mount namespace.
      key = files_->Register(absl::StrFormat("/proc/%d/map_files/%x-%x", pid, e.start, e.end),
                             e.path);
      if (!key.ok() && e.path.rfind("/memfd:", 0) != 0) {
        key = files_->Register(absl::StrCat("/proc/", pid, "/root", e.path), e.path);
      }
      // A process that exited meanwhile is not worth a warning.
      if (!key.ok() && ::kill(static_cast<pid_t>(pid), 0) == 0) {
        warnings_.push_back(absl::StrCat("pid ", pid, ": cannot open ", e.path, ": ",
                                         std::string(key.status().message())));
      }
    }
    m.bias = e.start - e.offset;
    if (key.ok() && e.path != "[vdso]") {
      auto [kept, added] = kept_.try_emplace(*key);
      if (added) {
        kept->second.reset(::open(absl::StrFormat("/proc/%d/map_files/%x-%x", pid, e.start, e.end).c_str(),
                                  O_RDONLY | O_CLOEXEC));
        if (!kept->second.valid()) kept->second.reset(::open(e.path.c_str(), O_RDONLY | O_CLOEXEC));
      }
      if (kept->second.valid()) m.kept_path = absl::StrCat("/proc/self/fd/", kept->second.get());
    }
    if (key.ok()) {
      m.file = *key;
      if (const FileInfo* f = files_->Find(*key)) {
        m.bias = LoadBias(e, f->loads);
        m.build_id = f->build_id;
      }
    }
    snap.mappings.push_back(std::move(m));
  }
  std::sort(snap.mappings.begin(), snap.mappings.end(),
            [](const TrackedMapping& a, const TrackedMapping& b) { return a.start < b.start; });
  for (const TrackedMapping& m : snap.mappings) {
    if (m.file) files_->AddRef(*m.file);
  }
  auto& hist = history_[pid];
  if (live_.count(pid) && !hist.empty()) ReleaseFiles(hist.back().mappings);
  hist.push_back(std::move(snap));
  live_.insert(pid);
  WriteEntry(pid);
  return absl::OkStatus();
}

void ProcessTracker::ReleaseFiles(const std::vector<TrackedMapping>& mappings) {
  for (const TrackedMapping& m : mappings) {
    if (m.file) files_->Release(*m.file);
  }
}

void ProcessTracker::Exit(uint32_t pid) {
  if (!live_.erase(pid)) return;
  bpf_map_delete_elem(procs_fd_, &pid);
  auto it = history_.find(pid);
  if (it != history_.end() && !it->second.empty()) ReleaseFiles(it->second.back().mappings);
}

void ProcessTracker::WriteEntry(uint32_t pid) {
  const Snapshot& snap = history_[pid].back();
  auto proc = std::make_unique<ehp_proc>();
  std::memset(proc.get(), 0, sizeof(ehp_proc));
  size_t n = 0;
  for (const TrackedMapping& m : snap.mappings) {
    if (n == EHP_MAX_MAPPINGS) {
      warnings_.push_back(absl::StrCat("pid ", pid, ": more than ", EHP_MAX_MAPPINGS,
                                       " executable mappings; stacks stop at the rest"));
      break;
    }
    ehp_mapping& out = proc->mappings[n++];
    out.begin = m.start;
    out.end = m.end;
    out.bias = m.bias;
    const FileInfo* f = m.file ? files_->Find(*m.file) : nullptr;
    if (f && f->state == FileInfo::State::kReady) {
      out.flags = EHP_MAPPING_HAS_TABLE;
      out.table_id = f->table_id;
    } else if (f && f->state == FileInfo::State::kPending) {
      out.flags = EHP_MAPPING_PENDING;
    }
  }
  proc->n_mappings = static_cast<uint32_t>(n);
  if (bpf_map_update_elem(procs_fd_, &pid, proc.get(), BPF_ANY) != 0) {
    warnings_.push_back(absl::StrCat("pid ", pid, ": cannot add to the BPF process map: ",
                                     std::strerror(errno),
                                     errno == E2BIG ? " (map full: raise --max-procs)" : ""));
  }
}

void ProcessTracker::TablesChanged(const std::vector<FileKey>& keys) {
  if (keys.empty()) return;
  for (uint32_t pid : live_) {
    const Snapshot& snap = history_[pid].back();
    bool affected = false;
    for (const TrackedMapping& m : snap.mappings) {
      if (m.file && std::find(keys.begin(), keys.end(), *m.file) != keys.end()) {
        affected = true;
        break;
      }
    }
    if (affected) WriteEntry(pid);
  }
}

std::vector<uint32_t> ProcessTracker::live_pids() const {
  return std::vector<uint32_t>(live_.begin(), live_.end());
}

const ProcessTracker::Snapshot* ProcessTracker::SnapshotAt(uint32_t pid, uint64_t time_ns) const {
  auto it = history_.find(pid);
  if (it == history_.end() || it->second.empty()) return nullptr;
  const auto& snaps = it->second;
  auto s = std::upper_bound(snaps.begin(), snaps.end(), time_ns,
                            [](uint64_t t, const Snapshot& x) { return t < x.from_ns; });
  return &(s == snaps.begin() ? *s : *std::prev(s));
}

const std::vector<TrackedMapping>* ProcessTracker::MappingsAt(uint32_t pid,
                                                             uint64_t time_ns) const {
  const Snapshot* snap = SnapshotAt(pid, time_ns);
  return snap ? &snap->mappings : nullptr;
}

std::optional<ResolvedAddr> ProcessTracker::Resolve(uint32_t pid, uint64_t time_ns,
                                                    uint64_t addr) const {
  const Snapshot* first = SnapshotAt(pid, time_ns);
  if (!first) return std::nullopt;
  const auto& snaps = history_.at(pid);
  // The snapshot in force first; then later ones: a library ld.so or dlopen
  // mapped after that snapshot but before the sample shows up only there.
  for (auto s = snaps.begin() + (first - snaps.data()); s != snaps.end(); ++s) {
    const auto& maps = s->mappings;
    auto m = std::upper_bound(maps.begin(), maps.end(), addr,
                              [](uint64_t a, const TrackedMapping& x) { return a < x.start; });
    if (m == maps.begin()) continue;
    --m;
    if (addr < m->end) return ResolvedAddr{&*m, addr - m->bias};
  }
  return std::nullopt;
}

std::map<std::string, std::string> ProcessTracker::BuildIds() const {
  std::map<std::string, std::string> out;
  for (const auto& [pid, snaps] : history_) {
    for (const Snapshot& snap : snaps) {
      for (const TrackedMapping& m : snap.mappings) {
        if (!m.build_id.empty()) out[m.path] = m.build_id;
      }
    }
  }
  return out;
}

std::vector<std::string> ProcessTracker::TakeWarnings() {
  std::vector<std::string> out;
  out.swap(warnings_);
  return out;
}

}  // namespace ehprof
