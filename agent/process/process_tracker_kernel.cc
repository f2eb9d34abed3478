// ProcessTracker's side of what the kernel learns by itself
// (bpf/proc_learn.bpf.h): which interpreter each executable runs with, for
// the exec program, and the mappings the exec and mmap programs added, kept
// for resolving as if read from /proc/PID/maps.
#include <fcntl.h>
#include <unistd.h>

#include <elf.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "agent/process/process_tracker.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {
namespace {

// AT_ENTRY and AT_BASE from /proc/PID/auxv; zeros when unreadable.
std::pair<uint64_t, uint64_t> EntryAndBase(uint32_t pid) {
  uint64_t words[128];
  UniqueFd fd(::open(absl::StrCat("/proc/", pid, "/auxv").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return {0, 0};
  const ssize_t n = ::read(fd.get(), words, sizeof(words));
  uint64_t entry = 0, base = 0;
  for (ssize_t i = 0; i + 1 < n / 8; i += 2) {
    if (words[i] == AT_NULL) break;
    if (words[i] == AT_ENTRY) entry = words[i + 1];
    if (words[i] == AT_BASE) base = words[i + 1];
  }
  return {entry, base};
}

KernelFileKey KeyOf(const MapsEntry& e) { return {EHP_KDEV(e.dev_major, e.dev_minor), e.inode}; }

}  // namespace

void ProcessTracker::LearnInterpreter(uint32_t pid, const std::vector<MapsEntry>& maps) {
  const auto [entry, base] = EntryAndBase(pid);
  if (entry == 0 || base == 0) return;  // static, or gone
  const MapsEntry* exe = nullptr;
  const MapsEntry* interp = nullptr;
  for (const MapsEntry& e : maps) {
    if (e.inode == 0) continue;
    if (e.start <= entry && entry < e.end) exe = &e;
    if (e.start == base) interp = &e;
  }
  if (exe && interp) kernel_index_->SetInterpreter(KeyOf(*exe), KeyOf(*interp));
}

void ProcessTracker::AddKernelMapping(uint32_t pid, uint64_t time_ns, const ehp_mapping& km,
                                      const KernelFileKey& kfile, uint64_t offset) {
  if (!kernel_index_) return;
  History& hist = history_[pid];
  hist.kernel_seen.push_back(km.begin);
  const std::optional<FileKey> key = kernel_index_->Find(kfile);
  const FileInfo* f = key ? files_->Find(*key) : nullptr;
  if (!f) return;
  // A read of the maps after the mapping was made holds it already.
  if (!hist.snaps.empty() && hist.snaps.back().from_ns > time_ns) return;
  TrackedMapping m;
  m.start = km.begin;
  m.end = km.end;
  m.bias = km.bias;
  m.offset = offset;
  m.path = f->path;
  m.build_id = f->build_id;
  m.file = *key;
  m.kernel_file = kfile;
  SetKeptPaths(*key, &m);
  auto insert = [&](std::vector<TrackedMapping>& maps) {
    std::vector<TrackedMapping> replaced;
    for (auto it = maps.begin(); it != maps.end();) {
      if (it->start < m.end && m.start < it->end) {
        replaced.push_back(std::move(*it));
        it = maps.erase(it);
      } else {
        ++it;
      }
    }
    auto at = std::upper_bound(maps.begin(), maps.end(), m.start,
                               [](uint64_t a, const TrackedMapping& x) { return a < x.start; });
    maps.insert(at, m);
    return replaced;
  };
  if (live_.count(pid) && !hist.snaps.empty() &&
      hist.ImageAt(hist.snaps.back().from_ns) == hist.ImageAt(time_ns)) {
    // More of the image in force: added to its latest snapshot, not as a
    // new one (a process maps a dozen libraries; thousands of processes
    // would keep a dozen snapshots each). Resolving consults that snapshot
    // for samples before the mapping was made too, which can only matter
    // for an address reused within a millisecond.
    files_->AddRef(*key);
    ReleaseFiles(insert(hist.snaps.back().mappings));
    hist.snaps.back().from_kernel = true;
    // The kernel mapped it PENDING, and its table was loaded since (the
    // file's entry said so after): the entry gets the table now.
    if ((km.flags & EHP_MAPPING_PENDING) && f->state != FileInfo::State::kPending) {
      WriteEntry(pid);
      return;
    }
    RewriteIfLost(pid, time_ns, km);
    return;
  }
  Snapshot snap;
  snap.from_ns = time_ns;
  snap.from_kernel = true;
  insert(snap.mappings);
  PushSnapshot(pid, std::move(snap));
  RewriteIfLost(pid, time_ns, km);
}

void ProcessTracker::RewriteIfLost(uint32_t pid, uint64_t time_ns, const ehp_mapping& km) {
  // The kernel writes its slot into the entry it looked up; a write of ours
  // landing between that lookup and the slot's store replaces the element,
  // and the slot is gone with the old one: a process that maps libc while we
  // write its entry (we do so right after its exec) would stop at libc for
  // the rest of its life. Only a write ending around or after time_ns can
  // have done that; the margin covers the kernel's lookup-to-timestamp time.
  constexpr uint64_t kMarginNs = 1000000;
  const History& hist = history_[pid];
  if (!procs_ || hist.written_ns == 0 || hist.written_ns + kMarginNs < time_ns) return;
  auto current = std::make_unique<ehp_proc>();
  if (!procs_->Read(pid, current.get())) return;  // gone, or never written
  auto holds = [&](const ehp_mapping* ms, uint32_t n) {
    for (uint32_t i = 0; i < n; ++i) {
      if (ms[i].begin <= km.begin && km.end <= ms[i].end) return true;
    }
    return false;
  };
  if (holds(current->mappings, std::min<uint32_t>(current->n_mappings, EHP_MAX_MAPPINGS)) ||
      holds(current->kernel, std::min<uint32_t>(current->n_kernel, EHP_KERNEL_MAPPINGS))) {
    return;
  }
  WriteEntry(pid);  // the snapshot holds km now
}

void ProcessTracker::Forked(uint32_t parent, uint32_t child, uint64_t time_ns) {
  if (!kernel_index_) return;  // the kernel learns nothing: /proc alone, as ever
  auto it = history_.find(parent);
  if (it == history_.end() || it->second.snaps.empty() || !live_.count(parent)) return;
  if (live_.count(child)) return;  // read already
  History& hist = history_[child];
  if (!hist.snaps.empty() && hist.snaps.back().from_ns > time_ns) return;
  Snapshot snap;
  snap.from_ns = time_ns;
  snap.from_kernel = true;
  snap.mappings = history_[parent].snaps.back().mappings;
  PushSnapshot(child, std::move(snap));
}

}  // namespace ehprof
