#include "agent/process/process_tracker.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <unistd.h>

#include <elf.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/process/proc_maps.h"
#include "agent/process/proc_root.h"
#include "agent/process/root_debug_file.h"
#include "agent/process/vdso_file.h"
#include "base/untrusted_file.h"
#include "bpf/ehprof_abi.h"

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

constexpr char kExitingTopic[] = "exiting";

// Alive and not a zombie (whose map_files are gone while kill(pid, 0)
// still succeeds).
bool Running(uint32_t pid) {
  const char state = ProcState(pid);
  return state != 0 && state != 'Z' && state != 'X';
}

}  // namespace

ProcessTracker::ProcessTracker(FileTables* files, std::unique_ptr<MapWriter> procs, Warnings* warnings)
    : files_(files), procs_(std::move(procs)), warnings_(warnings) {}

absl::Status ProcessTracker::Refresh(uint32_t pid, uint64_t now_ns) {
  auto maps = ReadProcMaps(static_cast<int>(pid));
  if (!maps.ok()) return maps.status();
  Apply(pid, *maps, now_ns);
  if (kernel_index_) LearnInterpreter(pid, *maps);
  return absl::OkStatus();
}

absl::StatusOr<FileKey> ProcessTracker::OpenMappedFile(uint32_t pid, const MapsEntry& e,
                                                       std::string* topic) {
  // map_files reaches the very file mapped, even deleted or replaced since,
  // but opening it needs CAP_CHECKPOINT_RESTORE (or CAP_SYS_ADMIN), and
  // CAP_DAC_READ_SEARCH for another user's process.
  // A magic link to the very file mapped: followed, but a process may map
  // a device, so only a regular file is opened for reading.
  absl::StatusOr<UniqueFd> mapped = OpenUntrustedFile(
      absl::StrFormat("/proc/%d/map_files/%x-%x", pid, e.start, e.end), LinkPolicy::kFollow);
  UniqueFd fd;
  if (mapped.ok()) fd = *std::move(mapped);
  if (absl::IsFailedPrecondition(mapped.status()) || absl::IsResourceExhausted(mapped.status())) {
    *topic = "not_regular";
    return absl::FailedPreconditionError(absl::StrCat("pid ", pid, ": ", mapped.status().message()));
  }
  if (!fd.valid()) {
    if (e.path.rfind("/memfd:", 0) == 0 || e.deleted) {
      // Its path names another file or none: reading that would be wrong.
      *topic = "map_files";
      return absl::UnavailableError(absl::StrCat(
          "pid ", pid, ": ", e.path, e.deleted ? " was deleted or replaced after it was mapped" : "",
          ": only /proc/", pid, "/map_files reaches it, which needs CAP_CHECKPOINT_RESTORE"));
    }
    // By its path as the process sees it: inside its root, where a
    // container's symlinks cannot lead to the host's files.
    absl::StatusOr<ProcessRoot> root = ProcessRoot::Open(pid);
    if (!root.ok()) {
      if (absl::IsPermissionDenied(root.status())) *topic = "proc_root";
      // Its root is gone only while it exits (after exit_fs, before it is
      // a zombie): nothing to say.
      if (absl::IsNotFound(root.status())) *topic = kExitingTopic;
      return root.status();
    }
    absl::StatusOr<UniqueFd> in_root = root->OpenFile(e.path);
    if (!in_root.ok()) return in_root.status();
    fd = std::move(*in_root);
  }
  bool added = false;
  absl::StatusOr<FileKey> key = KeepAndRegister(std::move(fd), e.path, &added);
  if (!key.ok()) return absl::NotFoundError(absl::StrCat("pid ", pid, ": ", key.status().message()));
  if (added) KeepDebugFileInRoot(pid, e.path, *key);
  return key;
}

absl::StatusOr<FileKey> ProcessTracker::OpenFileByPath(const std::string& path) {
  absl::StatusOr<UniqueFd> fd = OpenUntrustedFile(path, LinkPolicy::kFollow);
  if (!fd.ok()) return absl::NotFoundError(fd.status().message());
  bool added = false;
  return KeepAndRegister(*std::move(fd), path, &added);
}

absl::StatusOr<FileKey> ProcessTracker::RegisterVdso() {
  if (vdso_image_.empty()) vdso_image_ = ReadOwnVdso();
  if (vdso_image_.empty()) return absl::NotFoundError("no [vdso] in /proc/self/maps");
  return files_->Register("", "[vdso]", vdso_image_);
}

absl::StatusOr<FileKey> ProcessTracker::KeepAndRegister(UniqueFd fd, const std::string& path, bool* added) {
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  // The same four fields FileTables::Register keys a file by: the fd kept
  // for a file already seen serves again, and tables and symbols are read
  // through the kept fd, never by a path opened anew.
  const FileKey probe{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                      static_cast<uint64_t>(st.st_size),
                      int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
  auto [kept, inserted] = kept_.try_emplace(probe);
  if (inserted) kept->second = std::move(fd);
  *added = inserted;
  return files_->Register(absl::StrCat("/proc/self/fd/", kept->second.get()), path);
}

void ProcessTracker::KeepDebugFileInRoot(uint32_t pid, const std::string& path,
                                         const FileKey& key) {
  // In our own root the symbolizer's host-side lookup finds it already.
  absl::StatusOr<ProcessRoot> root = ProcessRoot::Open(pid);
  if (!root.ok() || root->IsOurs()) return;
  absl::StatusOr<UniqueFd> debug = OpenDebugFileInRoot(*root, path, kept_.at(key));
  if (debug.ok()) kept_debug_[key] = *std::move(debug);
}

void ProcessTracker::SetKeptPaths(const FileKey& key, TrackedMapping* m) const {
  if (auto kept = kept_.find(key); kept != kept_.end()) {
    m->kept_path = absl::StrCat("/proc/self/fd/", kept->second.get());
  }
  if (auto debug = kept_debug_.find(key); debug != kept_debug_.end()) {
    m->debug_path = absl::StrCat("/proc/self/fd/", debug->second.get());
  }
}

void ProcessTracker::WarnOnce(const std::string& topic, std::string warning) {
  // Bounded: a message naming a pid is its own topic, and a machine that
  // starts processes all day would otherwise grow this without end.
  warnings_->AddOnce(topic, std::move(warning));
}

TrackedMapping ProcessTracker::Track(uint32_t pid, const MapsEntry& e) {
  TrackedMapping m;
  m.start = e.start;
  m.end = e.end;
  absl::StatusOr<FileKey> key = absl::NotFoundError("anonymous");
  if (e.path == "[vdso]") {
    key = RegisterVdso();
    m.path = "[vdso]";
  } else if (e.path.empty() || e.path[0] == '[') {
    m.path = "//anon";  // JIT or other generated code: frame pointers only
  } else {
    m.path = e.path;
    std::string topic;
    key = OpenMappedFile(pid, e, &topic);
    // A process that exited meanwhile is not worth a warning.
    if (!key.ok() && topic != kExitingTopic && Running(pid)) {
      const std::string message(key.status().message());
      // A missing capability fails every such file alike: said once.
      if (topic.empty()) {
        WarnOnce(message, message);
      } else {
        WarnOnce(topic, absl::StrCat(message, "; no unwind table or symbols for such files "
                                              "(frame pointers used there; further ones not listed)"));
      }
    }
  }
  m.bias = e.start - e.offset;
  m.offset = e.offset;
  if (m.path == "[vdso]") {
    m.kernel_file = {EHP_VDSO_KEY_DEV, EHP_VDSO_KEY_INO};
  } else if (m.path != "//anon") {
    m.kernel_file = {EHP_KDEV(e.dev_major, e.dev_minor), e.inode};
  }
  if (key.ok() && e.path != "[vdso]") SetKeptPaths(*key, &m);
  if (key.ok()) {
    m.file = *key;
    if (const FileInfo* f = files_->Find(*key)) {
      m.bias = LoadBias(e, f->loads);
      m.build_id = f->build_id;
    }
  }
  return m;
}

size_t ProcessTracker::History::ImageAt(uint64_t time_ns) const {
  return static_cast<size_t>(std::upper_bound(ends.begin(), ends.end(), time_ns) - ends.begin());
}

void ProcessTracker::Apply(uint32_t pid, const std::vector<MapsEntry>& maps, uint64_t now_ns) {
  Snapshot snap;
  snap.from_ns = now_ns;
  for (const MapsEntry& e : maps) {
    if (!e.exec || e.path == "[vsyscall]") continue;
    snap.mappings.push_back(Track(pid, e));
  }
  std::sort(snap.mappings.begin(), snap.mappings.end(),
            [](const TrackedMapping& a, const TrackedMapping& b) { return a.start < b.start; });
  History& hist = history_[pid];
  const bool live = live_.count(pid) > 0;
  if (live && !hist.snaps.empty() &&
      hist.ImageAt(hist.snaps.back().from_ns) == hist.ImageAt(now_ns)) {
    // Re-reads of an unchanged image (exec follow-ups, unknown pcs that
    // stay unknown) add nothing: keep one snapshot, not one per read.
    const auto& last = hist.snaps.back().mappings;
    auto same = [](const TrackedMapping& a, const TrackedMapping& b) {
      return a.start == b.start && a.end == b.end && a.bias == b.bias && a.file == b.file;
    };
    if (std::equal(last.begin(), last.end(), snap.mappings.begin(), snap.mappings.end(), same)) {
      // The map may have room now; or the entry is the kernel's, whose
      // added slots a full entry clears.
      if (refused_.count(pid) || hist.snaps.back().from_kernel) {
        hist.snaps.back().from_kernel = false;
        WriteEntry(pid);
      }
      return;
    }
  }
  PushSnapshot(pid, std::move(snap));
  WriteEntry(pid);
}

void ProcessTracker::PushSnapshot(uint32_t pid, Snapshot snap) {
  History& hist = history_[pid];
  for (const TrackedMapping& m : snap.mappings) {
    if (m.file) files_->AddRef(*m.file);
  }
  if (live_.count(pid) && !hist.snaps.empty()) ReleaseFiles(hist.snaps.back().mappings);
  hist.snaps.push_back(std::move(snap));
  live_.insert(pid);
}

void ProcessTracker::ReleaseFiles(const std::vector<TrackedMapping>& mappings) {
  for (const TrackedMapping& m : mappings) {
    if (m.file) files_->Release(*m.file);
  }
}

void ProcessTracker::ImageEnded(uint32_t pid, uint64_t time_ns) {
  // The kernel's slots from here on are the new image's (the exec program
  // made the entry anew): none of them has been seen.
  history_[pid].kernel_seen.clear();
  auto& ends = history_[pid].ends;
  ends.insert(std::upper_bound(ends.begin(), ends.end(), time_ns), time_ns);
}

void ProcessTracker::Exit(uint32_t pid, uint64_t time_ns, bool keep_history) {
  auto it = history_.find(pid);
  if (live_.erase(pid)) {
    if (procs_) procs_->Delete(pid);
    if (it != history_.end() && !it->second.snaps.empty()) ReleaseFiles(it->second.snaps.back().mappings);
  }
  over_limit_warned_.erase(pid);
  refused_.erase(pid);
  if (it == history_.end()) return;
  History& hist = it->second;
  if (!keep_history) {
    // No sample came from this process since the previous exit of its pid:
    // none of its images (exec makes several) is needed for resolving.
    const uint64_t since = hist.last_exit_ns;
    std::erase_if(hist.snaps, [&](const Snapshot& s) { return s.from_ns >= since; });
    std::erase_if(hist.ends, [&](uint64_t e) { return e > since; });
    if (hist.snaps.empty()) {
      history_.erase(it);
      return;
    }
  }
  ImageEnded(pid, time_ns);
  hist.last_exit_ns = time_ns;
}

bool ProcessTracker::Covers(uint32_t pid, uint64_t addr) const {
  auto it = history_.find(pid);
  if (it == history_.end() || it->second.snaps.empty()) return false;
  for (const TrackedMapping& m : it->second.snaps.back().mappings) {
    if (addr >= m.start && addr < m.end) return true;
  }
  return false;
}

void ProcessTracker::TablesChanged(const std::vector<FileKey>& keys) {
  if (keys.empty()) return;
  // Said to the kernel side even when no live process maps the file now: a
  // library loaded and unloaded (dlclose, or its process's exit) before its
  // table was, is mapped again by the next process (a compiler's plugins).
  if (kernel_index_) {
    for (const FileKey& key : keys) {
      if (const FileInfo* f = files_->Find(key)) kernel_index_->Refresh(key, *f);
    }
  }
  for (uint32_t pid : live_) {
    const Snapshot& snap = history_[pid].snaps.back();
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

std::pair<const ProcessTracker::Snapshot*, const ProcessTracker::Snapshot*>
ProcessTracker::SnapshotsAt(uint32_t pid, uint64_t time_ns) const {
  auto it = history_.find(pid);
  if (it == history_.end() || it->second.snaps.empty()) return {nullptr, nullptr};
  const History& hist = it->second;
  const size_t image = hist.ImageAt(time_ns);
  auto image_of = [&](const Snapshot& s) { return hist.ImageAt(s.from_ns); };
  // Snapshots are in time order, so each image's are contiguous.
  auto lo = std::partition_point(hist.snaps.begin(), hist.snaps.end(),
                                 [&](const Snapshot& s) { return image_of(s) < image; });
  auto hi = std::partition_point(lo, hist.snaps.end(),
                                 [&](const Snapshot& s) { return image_of(s) == image; });
  if (lo == hi) return {nullptr, nullptr};
  auto s = std::upper_bound(lo, hi, time_ns,
                            [](uint64_t t, const Snapshot& x) { return t < x.from_ns; });
  const Snapshot* first = s == lo ? &*lo : &*std::prev(s);
  return {first, hist.snaps.data() + (hi - hist.snaps.begin())};
}

const std::vector<TrackedMapping>* ProcessTracker::MappingsAt(uint32_t pid,
                                                             uint64_t time_ns) const {
  const Snapshot* snap = SnapshotsAt(pid, time_ns).first;
  return snap ? &snap->mappings : nullptr;
}

namespace {

// The parts of anonymous code m that no mapping of `out` (sorted, none
// overlapping) covers, added to it: JIT code grows its region, which the
// kernel merges with the part known already.
void AddUncoveredAnon(std::vector<TrackedMapping>& out, const TrackedMapping& m) {
  std::vector<TrackedMapping> pieces;
  const auto piece = [&](uint64_t from, uint64_t to) {
    TrackedMapping p = m;
    p.start = from;
    p.end = to;
    pieces.push_back(std::move(p));
  };
  uint64_t from = m.start;
  auto it = std::upper_bound(out.begin(), out.end(), m.start,
                             [](uint64_t a, const TrackedMapping& x) { return a < x.end; });
  for (; it != out.end() && it->start < m.end; ++it) {
    if (it->start > from) piece(from, it->start);
    from = std::max(from, it->end);
  }
  if (from < m.end) piece(from, m.end);
  for (TrackedMapping& p : pieces) {
    auto at = std::upper_bound(out.begin(), out.end(), p.start,
                               [](uint64_t a, const TrackedMapping& x) { return a < x.start; });
    out.insert(at, std::move(p));
  }
}

}  // namespace

std::vector<TrackedMapping> ProcessTracker::MappingsFrom(uint32_t pid, uint64_t time_ns) const {
  auto [first, last] = SnapshotsAt(pid, time_ns);
  if (!first) return {};
  std::vector<TrackedMapping> out = first->mappings;  // sorted, none overlapping
  const auto by_start = [](uint64_t a, const TrackedMapping& x) { return a < x.start; };
  for (const Snapshot* s = first + 1; s < last; ++s) {
    for (const TrackedMapping& m : s->mappings) {
      // The first mapping starting at or after m's end; m overlaps none
      // when the one before that ends at or before m's start.
      auto at = std::upper_bound(out.begin(), out.end(), m.end - 1, by_start);
      if (at != out.begin() && std::prev(at)->end > m.start) {
        // A file mapped over another is a later image's; the in-force
        // one wins.
        if (m.path == "//anon") AddUncoveredAnon(out, m);
        continue;
      }
      out.insert(at, m);
    }
  }
  return out;
}

std::optional<ResolvedAddr> ProcessTracker::Resolve(uint32_t pid, uint64_t time_ns,
                                                    uint64_t addr) const {
  auto [first, last] = SnapshotsAt(pid, time_ns);
  // The snapshot in force first; then later ones of the same image: a
  // library ld.so or dlopen mapped after that snapshot but before the
  // sample shows up only there.
  for (const Snapshot* s = first; s && s != last; ++s) {
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
  for (const auto& [pid, hist] : history_) {
    for (const Snapshot& snap : hist.snaps) {
      for (const TrackedMapping& m : snap.mappings) {
        if (!m.build_id.empty()) out[m.path] = m.build_id;
      }
    }
  }
  return out;
}

std::vector<ReleasedFile> ProcessTracker::ReleaseUnmappedFiles(uint64_t superseded_ns) {
  std::set<FileKey> mapped;
  for (auto it = history_.begin(); it != history_.end();) {
    auto& [pid, hist] = *it;
    size_t replaced = 0;
    while (replaced + 1 < hist.snaps.size() && hist.snaps[replaced + 1].from_ns <= superseded_ns) ++replaced;
    if (replaced > 0) {
      // The ends before the first snapshot kept go too: they only told
      // older samples from it. (Only the latest snapshot holds references.)
      hist.snaps.erase(hist.snaps.begin(), hist.snaps.begin() + static_cast<ptrdiff_t>(replaced));
      const uint64_t first = hist.snaps.front().from_ns;
      std::erase_if(hist.ends, [&](uint64_t e) { return e <= first; });
    }
    // An exec or a kernel mapping seen for a process never read, whose
    // exit event was lost: nothing to resolve with, and gone.
    if (hist.snaps.empty() && !live_.count(pid) && !Running(pid)) {
      it = history_.erase(it);
      continue;
    }
    for (const Snapshot& snap : hist.snaps) {
      for (const TrackedMapping& m : snap.mappings) {
        if (m.file) mapped.insert(*m.file);
      }
    }
    ++it;
  }
  std::vector<ReleasedFile> out;
  for (auto* kept : {&kept_, &kept_debug_}) {
    for (auto it = kept->begin(); it != kept->end();) {
      if (mapped.count(it->first)) {
        ++it;
        continue;
      }
      out.push_back({absl::StrCat("/proc/self/fd/", it->second.get()), std::move(it->second)});
      it = kept->erase(it);
    }
  }
  return out;
}


}  // namespace ehprof
