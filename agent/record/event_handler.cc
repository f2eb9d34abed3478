#include "agent/record/event_handler.h"

#include <utility>

#include "agent/process/proc_maps.h"
#include "agent/record/event_decoder.h"
#include "agent/record/run_control.h"
#include "base/guarded.h"

namespace ehprof {

absl::Status TrackProcess(ProcessTracker* tracker, const RuntimeTrackers& runtimes, uint32_t pid,
                          uint64_t now_ns) {
  return Guarded("reading a process", "that process is not tracked this time", [&] {
    const SharedProcMaps one_read(static_cast<int>(pid));  // the tracker's and every runtime's
    absl::Status st = tracker->Refresh(pid, now_ns);
    if (st.ok()) {
      runtimes.ForEach([&](auto& runtime) {
        runtime.MapsChanged(pid);
        runtime.Notice(pid, now_ns);
      });
    }
    return st;
  });
}

void EventHandler::HandleSample(RawSample&& s, size_t size) {
  if (hooks_.accept && !hooks_.accept(s)) return;
  {
    const SharedProcMaps one_read(static_cast<int>(s.pid));  // runtimes that look at it again
    runtimes_.ForEach([&](auto& runtime) { runtime.NameFrames(s.pid, s.time_ns, &s.user); });
  }
  if (s.stop_reason == EHP_STOP_NO_PROC) to_refresh_.insert(s.pid);
  if (sink_->ResolvesLater()) sampled_.insert(s.pid);
  if (deferred_ && deferred_->Hold(s, size)) {
    // Its process's mappings are what the late walk needs, after an exit too.
    sampled_.insert(s.pid);
    return;
  }
  Emit(std::move(s), size);
}

void EventHandler::Emit(RawSample&& s, size_t size) {
  if (hooks_.count) hooks_.count(s, size);
  sink_->Add(std::move(s), *tracker_);
}

void EventHandler::RetryDeferred(uint64_t now_ns, bool final) {
  if (!deferred_) return;
  std::set<uint32_t> let_go;
  deferred_->Retry(now_ns, final, [&](RawSample&& s, size_t size) {
    let_go.insert(s.pid);
    Emit(std::move(s), size);
  });
  if (sink_->ResolvesLater()) return;
  // Samples are located as they come (the agent): a process's history
  // was kept past its exit only for its held samples, and its files with
  // it (hostile_state_priv_test).
  for (uint32_t pid : let_go) {
    if (deferred_->Holds(pid)) continue;
    sampled_.erase(pid);
    if (exited_held_.erase(pid)) tracker_->ForgetExited(pid);
  }
}

void EventHandler::Handle(const void* data, size_t size) {
  (void)Guarded("handling a BPF record", "that record is dropped", [&] {
    HandleRecord(data, size);
    return absl::OkStatus();
  });
}

void EventHandler::HandleRecord(const void* data, size_t size) {
  DecodedEvent d = DecodeEvent(data, size);
  const ehp_event& ev = d.header;
  switch (d.kind) {
    case DecodedEvent::Kind::kSample:
      HandleSample(std::move(d.sample), size);
      break;
    case DecodedEvent::Kind::kVerify:
      sink_->AddCapture(ev, std::move(d.verify));
      break;
    case DecodedEvent::Kind::kExec:
      sink_->NewImage(ev.pid);
      tracker_->ImageEnded(ev.pid, ev.time_ns);
      runtimes_.ForEach([&](auto& runtime) { runtime.Exec(ev.pid); });
      if (hooks_.exec) hooks_.exec(ev.pid);
      for (uint64_t delay_ms : {5, 20, 60, 200}) {
        followups_.emplace(ev.time_ns + delay_ms * 1000000, ev.pid);
      }
      to_refresh_.insert(ev.pid);
      break;
    case DecodedEvent::Kind::kDeferred:
      if (deferred_) deferred_->AddCapture(ev, std::move(d.deferred), size);
      break;
    case DecodedEvent::Kind::kMapping:
      tracker_->AddKernelMapping(ev.pid, ev.time_ns, d.mapping.m, {d.mapping.file.dev, d.mapping.file.ino}, ev.addr);
      // A library mapped into a process running no interpreter yet may be
      // one (dlopen'd libpython): its next sample looks again.
      runtimes_.ForEach([pid = ev.pid](auto& runtime) { runtime.MapsChanged(pid); });
      break;
    case DecodedEvent::Kind::kUnknownPc:
      // A pc in a mapping the process entry had no room for: the maps are
      // known, re-reading them would not help.
      if (tracker_->Covers(ev.pid, ev.addr)) break;
      if (!UnknownPcReadDue(ev.pid, ev.time_ns)) break;
      to_refresh_.insert(ev.pid);
      break;
    case DecodedEvent::Kind::kUnknownPid:
      to_refresh_.insert(ev.pid);
      break;
    case DecodedEvent::Kind::kNewFile:
      // Read now, while the file is still mapped: once met, it is published
      // and the kernel side maps it into every process itself.
      if (NewFileReadDue(ev.pid, ev.time_ns)) to_refresh_.insert(ev.pid);
      break;
    case DecodedEvent::Kind::kFork:
      tracker_->Forked(ev.pid, static_cast<uint32_t>(ev.addr), ev.time_ns);
      to_refresh_.insert(static_cast<uint32_t>(ev.addr));
      break;
    case DecodedEvent::Kind::kExit:
      sink_->NewImage(ev.pid);  // a reused pid is another image too
      to_exit_.emplace(ev.pid, ev.time_ns);
      break;
    default:
      break;
  }
}

bool EventHandler::UnknownPcReadDue(uint32_t pid, uint64_t time_ns) {
  UnknownPcReads& r = unknown_pc_reads_[pid];
  if (r.scheduled && time_ns >= r.next_ns) {  // that read is done
    r.scheduled = false;
    r.next_ns += kUnknownPcReadIntervalNs;
  }
  if (time_ns >= r.next_ns) {
    r.next_ns = time_ns + kUnknownPcReadIntervalNs;
    return true;
  }
  // Too soon: once, when it is time (the pc may be in memory mapped since).
  if (!r.scheduled) {
    followups_.emplace(r.next_ns, pid);
    r.scheduled = true;
  }
  return false;
}

bool EventHandler::NewFileReadDue(uint32_t pid, uint64_t time_ns) {
  NewFileReads& r = new_file_reads_[pid];
  if (time_ns - r.window_ns >= kNewFileWindowNs) {
    r.window_ns = time_ns;
    r.reads = 0;
  }
  return r.reads++ < kNewFileReadsPerWindow;
}

void EventHandler::ProcessPending(uint64_t now_ns) {
  while (!followups_.empty() && followups_.begin()->first <= now_ns) {
    to_refresh_.insert(followups_.begin()->second);
    followups_.erase(followups_.begin());
  }
  for (uint32_t pid : to_refresh_) {
    if (to_exit_.count(pid)) continue;
    absl::Status st = TrackProcess(tracker_, runtimes_, pid, now_ns);
    if (!st.ok() && !absl::IsNotFound(st)) warnings_->Add(std::string(st.message()));
  }
  to_refresh_.clear();
  // A process that ended without an EXIT event (the ring buffer was full)
  // must not keep its entry: look for vanished ones now and then.
  if (now_ns - last_sweep_ns_ > 1000000000ull) {
    last_sweep_ns_ = now_ns;
    for (uint32_t pid : tracker_->live_pids()) {
      if (!ProcessExists(pid)) to_exit_.emplace(pid, now_ns);
    }
  }
  for (auto [pid, time_ns] : to_exit_) {
    // An image no sample came from is not needed for resolving: forget it,
    // so thousands of short-lived processes leave no trace.
    tracker_->Exit(pid, time_ns, /*keep_history=*/sampled_.erase(pid) > 0);
    // Its history stays for its held samples: forgotten with the last.
    if (deferred_ && deferred_->Holds(pid) && !sink_->ResolvesLater()) exited_held_.insert(pid);
    runtimes_.ForEach([pid = pid](auto& runtime) { runtime.Exit(pid); });
    unknown_pc_reads_.erase(pid);
    new_file_reads_.erase(pid);
    if (hooks_.exited) hooks_.exited(pid);
  }
  to_exit_.clear();
}

}  // namespace ehprof
