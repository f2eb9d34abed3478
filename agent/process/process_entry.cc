// The BPF process entry built from a tracker's snapshot: which mappings
// fit (ChooseEntryMappings) and the write itself, with its refusals.
#include <elf.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "agent/process/process_tracker.h"
#include "base/monotonic_clock.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

std::vector<const TrackedMapping*> ChooseEntryMappings(
    const std::vector<TrackedMapping>& all, size_t limit,
    const std::function<bool(const TrackedMapping&)>& loader_like) {
  std::vector<const TrackedMapping*> chosen;
  for (const TrackedMapping& m : all) chosen.push_back(&m);
  if (chosen.size() <= limit) return chosen;
  // Every file's first mapping before any file's second, so a process that
  // maps one file thousands of times still unwinds through its binary,
  // libc and ld.so; anonymous code counts as one file. Within a file the
  // mappings the loader would make (an executable PT_LOAD at its offset)
  // come first: extra copies of a file's first page must not displace its
  // text.
  std::stable_partition(chosen.begin(), chosen.end(),
                        [&](const TrackedMapping* m) { return loader_like(*m); });
  std::map<std::string, size_t> seen;
  std::vector<std::pair<size_t, const TrackedMapping*>> ranked;
  for (const TrackedMapping* m : chosen) {
    const std::string id = m->file ? absl::StrCat(m->file->dev, ":", m->file->inode) : m->path;
    ranked.push_back({seen[id]++, m});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  ranked.resize(limit);
  chosen.clear();
  for (const auto& r : ranked) chosen.push_back(r.second);
  std::sort(chosen.begin(), chosen.end(),
            [](const TrackedMapping* a, const TrackedMapping* b) { return a->start < b->start; });
  return chosen;
}

ehp_mapping EntryMapping(const TrackedMapping& m, const FileInfo* f) {
  ehp_mapping out{};
  out.begin = m.start;
  out.end = m.end;
  out.bias = m.bias;
  out.flags = f ? TableStateFlags(*f) : 0;
  if (out.flags & EHP_MAPPING_HAS_TABLE) out.table_id = f->table_id;
  if (out.flags == 0 && m.path == "//anon") {
    out.flags = EHP_MAPPING_ANON;  // JIT code: a runtime's walk may know it
  }
  return out;
}

void ProcessTracker::CarryKernelSlots(uint32_t pid, const std::vector<const TrackedMapping*>& chosen,
                                      ehp_proc* proc) {
  // The snapshot written may be older than a mapping the kernel added
  // since (a library mapped between our read of /proc/PID/maps and this
  // write; its event not read yet): replacing the entry would lose it, and
  // a 1 ms process would stop unwinding at that library for the rest of its
  // life. Slots user space has not been told of, and that no mapping
  // written covers, are kept. The kernel may add one between this read and
  // the write; its event then finds it in a snapshot and rewrites.
  // Without the kernel index the kernel side learns nothing (learn_maps is
  // off with it): no slot to keep, and no entry worth reading back.
  if (!kernel_index_) return;
  History& hist = history_[pid];
  auto current = std::make_unique<ehp_proc>();
  if (procs_->Read(pid, current.get())) {
    const uint32_t slots = std::min<uint32_t>(current->n_kernel, EHP_KERNEL_MAPPINGS);
    for (uint32_t i = 0; i < slots && proc->n_kernel < EHP_KERNEL_MAPPINGS; ++i) {
      const ehp_mapping& k = current->kernel[i];
      if (std::find(hist.kernel_seen.begin(), hist.kernel_seen.end(), k.begin) !=
          hist.kernel_seen.end()) {
        continue;
      }
      const bool covered = std::any_of(chosen.begin(), chosen.end(), [&](const TrackedMapping* m) {
        return m->start < k.end && k.begin < m->end;
      });
      if (!covered) proc->kernel[proc->n_kernel++] = k;
    }
  }
  hist.kernel_seen.clear();
}

void ProcessTracker::WriteEntry(uint32_t pid) {
  const std::vector<TrackedMapping>& all = history_[pid].snaps.back().mappings;
  auto loader_like = [&](const TrackedMapping& m) {
    const FileInfo* f = m.file ? files_->Find(*m.file) : nullptr;
    if (!f) return false;
    for (const ElfSegment& s : f->loads) {
      if ((s.flags & PF_X) && (s.offset & ~uint64_t{0xfff}) == m.offset) return true;
    }
    return false;
  };
  const std::vector<const TrackedMapping*> chosen =
      ChooseEntryMappings(all, EHP_MAX_MAPPINGS, loader_like);
  if (chosen.size() < all.size() && over_limit_warned_.insert(pid).second) {
    warnings_->Add(absl::StrCat(
        "pid ", pid, ": ", all.size(), " executable mappings, more than the ", EHP_MAX_MAPPINGS,
        " a process entry holds: every file's first mapping kept, stacks stop in the other ",
        all.size() - chosen.size()));
  }
  if (!procs_) return;
  auto proc = std::make_unique<ehp_proc>();
  std::memset(proc.get(), 0, sizeof(ehp_proc));
  size_t n = 0;
  for (const TrackedMapping* m : chosen) {
    const FileInfo* f = m->file ? files_->Find(*m->file) : nullptr;
    proc->mappings[n++] = EntryMapping(*m, f);
    if (f && kernel_index_) kernel_index_->Publish(m->kernel_file, *m->file, *f);
  }
  proc->n_mappings = static_cast<uint32_t>(n);
  CarryKernelSlots(pid, chosen, proc.get());
  const absl::Status st = procs_->Write(pid, proc.get(), 1);
  if (st.ok()) {
    history_[pid].written_ns = MonotonicNs();
    refused_.erase(pid);
  } else {
    const bool full = absl::IsResourceExhausted(st);
    const bool first = refused_.insert(pid).second;
    if (first) ++procs_full_;
    // A full map is said once for the whole recording (the summary counts
    // the processes); other errors once per process.
    if (first && (!full || procs_full_ == 1)) {
      warnings_->Add(absl::StrCat(
          "pid ", pid, ": cannot add to the BPF process map: ", st.message(),
          full ? " (map full: the user stacks of processes without an entry stop at "
                 "the leaf until one exits; raise --max-procs)"
               : ""));
    }
  }
}

}  // namespace ehprof
