// The recorder's start with processes already running (-a, -p) and its
// part in ordering table builds by demand: the processes being sampled are
// read first, their tables load while the rest are read, and a sample that
// stopped for want of a table moves that table's build to the front.
#include <unistd.h>

#include <algorithm>

#include "agent/process/proc_maps.h"
#include "agent/record/recorder.h"
#include "base/guarded.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {
namespace {

// How often tables finished meanwhile are loaded while the processes
// running at start are read: on a busy host reading them all takes
// seconds, and the first tables are ready within milliseconds.
constexpr uint64_t kLoadTablesEveryNs = 20000000;

// On a CPU or waiting for one ("R" in /proc/PID/stat): the processes the
// first samples come from.
bool Runnable(uint32_t pid) { return ProcState(pid) == 'R'; }

}  // namespace

void Recorder::LoadFinishedTables() { tracker_->TablesChanged(files_->CollectFinished()); }

void Recorder::PrefetchVdso() {
  // Every process maps it, and clock_gettime-heavy ones (fio) spend their
  // first moments in it: built before any other file.
  auto key = tracker_->RegisterVdso();
  if (!key.ok()) return;
  files_->AddRef(*key);
  files_->Prioritize(*key, FileTables::kUrgent);
  prefetched_.push_back(*key);
}

void Recorder::ReadInitialProcesses(std::vector<uint32_t> pids, uint64_t now_ns) {
  std::erase(pids, static_cast<uint32_t>(getpid()));
  std::stable_partition(pids.begin(), pids.end(), Runnable);
  const RuntimeTrackers runtimes = Runtimes();
  uint64_t loaded_ns = NowNs();
  auto load_tables = [&] {
    if (const uint64_t now = NowNs(); now - loaded_ns > kLoadTablesEveryNs) {
      LoadFinishedTables();
      loaded_ns = now;
    }
  };
  // Every entry first, then the runtimes (which read symbols and process
  // memory): a process's native stacks need only its entry and tables.
  std::vector<uint32_t> read;
  for (uint32_t pid : pids) {
    absl::Status st = Guarded("reading a process", "that process is not tracked this time",
                              [&] { return tracker_->Refresh(pid, now_ns); });
    if (st.ok()) {
      read.push_back(pid);
    } else if (!absl::IsNotFound(st) && !options_.all) {
      warnings_->Add(std::string(st.message()));
    }
    load_tables();
  }
  for (uint32_t pid : read) {
    const SharedProcMaps one_read(static_cast<int>(pid));  // every runtime's
    runtimes.ForEach([&](auto& runtime) {
      (void)Guarded("reading a process", "its runtime's frames are not named", [&] {
        runtime.Notice(pid, now_ns);
        return absl::OkStatus();
      });
    });
    load_tables();
  }
  LoadFinishedTables();
  summary_.start_processes = read.size();
  for (uint32_t pid : read) {
    if (const std::vector<TrackedMapping>* maps = tracker_->MappingsAt(pid, now_ns)) {
      for (const TrackedMapping& m : *maps) {
        if (m.file) start_files_.insert(*m.file);
      }
    }
  }
}

void Recorder::WaitForStartTables(EventSource& events) {
  const uint64_t begin = NowNs();
  record_from_ns_ = UINT64_MAX;
  auto late = [&] {
    return static_cast<size_t>(std::count_if(start_files_.begin(), start_files_.end(), [&](const FileKey& key) {
      const FileInfo* f = files_->Find(key);
      return f && f->state == FileInfo::State::kPending;
    }));
  };
  // As a command's start waits for its own tables (PrefetchCommandTables):
  // the samples of the processes already running could meanwhile only stop
  // at "table not loaded yet" (RecordOptions::start_wait_ms, 3 s).
  const uint64_t wait_ns = uint64_t{options_.start_wait_ms} * 1000000;
  size_t n;
  while ((n = late()) > 0 && NowNs() - begin < wait_ns && !g_stop_signal.load()) {
    events.Poll(10);
    ProcessPending(NowNs());
  }
  record_from_ns_ = NowNs();
  summary_.start_wait_ns = record_from_ns_ - begin;
  summary_.start_tables_late = n;
}

void Recorder::HurryExecedTables(uint64_t now_ns) {
  for (uint32_t pid : execed_) {
    const std::vector<TrackedMapping>* maps = tracker_->MappingsAt(pid, now_ns);
    if (!maps) continue;
    for (const TrackedMapping& m : *maps) {
      if (m.file) files_->Prioritize(*m.file, FileTables::kExeced);
    }
  }
  execed_.clear();
}

void Recorder::HurryTableOf(const RawSample& s) {
  if (s.stop_reason != EHP_STOP_NO_TABLE || s.user.empty()) return;
  // The frame the walk stopped at: its pc's file has no table yet.
  const uint64_t pc = s.user.back() & EHP_FRAME_ADDR_MASK;
  std::optional<ResolvedAddr> at = tracker_->Resolve(s.pid, s.time_ns, pc);
  if (at && at->mapping->file) files_->Prioritize(*at->mapping->file, FileTables::kUrgent);
}

}  // namespace ehprof
