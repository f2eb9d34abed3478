#include "agent/deferred/deferred_walks.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "bpf/host/walk_replay.h"

namespace ehprof {
namespace {

// What a late walk waits out: a table not loaded yet, a process not known
// yet.
bool Deferrable(uint8_t stop) { return stop == EHP_STOP_NO_TABLE || stop == EHP_STOP_NO_PROC; }

// A pc, or the return address a frame pointer led to, in no mapping the
// process's entry had: a library ld.so or dlopen had just mapped, JIT code
// just placed; the maps read again may hold it.
bool Unmapped(uint8_t stop) { return stop == EHP_STOP_NO_MAPPING || stop == EHP_STOP_FP_RA_UNMAPPED; }

// What the kernel's walk may send a copy for.
bool Copied(uint8_t stop) { return Deferrable(stop) || Unmapped(stop); }

// The mapping of mappings (sorted by start) holding addr, or null.
const TrackedMapping* MappingOf(const std::vector<TrackedMapping>& mappings, uint64_t addr) {
  auto it = std::upper_bound(mappings.begin(), mappings.end(), addr,
                             [](uint64_t a, const TrackedMapping& m) { return a < m.start; });
  if (it == mappings.begin()) return nullptr;
  --it;
  return addr < it->end ? &*it : nullptr;
}

// A Python frame or a Ruby, PHP or Perl one (the runtimes whose loops
// InInterpreterLoop knows).
bool IsInterpreterWord(uint64_t w) { return EHP_IS_PY_FRAME(w) || EHP_IS_INTERP_FRAME(w); }

}  // namespace

uint32_t LateFramesBeforeLoop(uint32_t pid, const std::vector<uint64_t>& kernel_user, const ehp_deferred& at,
                              const uint64_t* frames, uint32_t n, const LoopTest& in_loop) {
  if (!in_loop) return n;
  const uint64_t stop_pc = at.regs[EHP_REG_RIP];
  if (std::none_of(kernel_user.begin(), kernel_user.end(), IsInterpreterWord) &&
      in_loop(pid, at.exact ? stop_pc : stop_pc - 1)) {
    return 0;
  }
  for (uint32_t i = 0; i < n; ++i) {
    const uint64_t pc = frames[i] & EHP_FRAME_ADDR_MASK;
    // A return address's call is the byte before it.
    if (in_loop(pid, (frames[i] & EHP_FRAME_EXACT) ? pc : pc - 1)) return i;
  }
  return n;
}

DeferredWalks::DeferredWalks(const ProcessTracker* tracker, const FileTables* files, TableMaps tables,
                             Options options)
    : tracker_(tracker),
      files_(files),
      tables_(std::move(tables)),
      options_(options),
      env_(&tables_),
      proc_(std::make_unique<ehp_proc>()) {}

void DeferredWalks::AddCapture(const ehp_event& header, DeferredCapture&& c, size_t record_size) {
  stats_.bytes += record_size;
  if (!Copied(c.state.stop_reason)) return;
  Pending& p = last_capture_[header.cpu];
  p.tid = header.tid;
  p.time_ns = header.time_ns;
  p.capture = std::move(c);
}

bool DeferredWalks::Hold(RawSample& s, size_t record_size) {
  auto it = last_capture_.find(s.cpu);
  if (it == last_capture_.end()) return false;
  Pending p = std::move(it->second);
  last_capture_.erase(it);
  // The capture is its sample's only if it came right before it, as the
  // kernel's walk left it.
  if (p.tid != s.tid || p.time_ns != s.time_ns || p.capture.state.stop_reason != s.stop_reason) {
    return false;
  }
  size_t& mine = held_per_pid_[s.pid];
  if (mine >= options_.max_per_process || held_bytes_ + p.capture.stack.size() > options_.max_bytes) {
    ++stats_.over_cap;
    if (mine == 0) held_per_pid_.erase(s.pid);
    return false;
  }
  ++mine;
  held_bytes_ += p.capture.stack.size();
  Held h;
  h.arrived_ns = s.time_ns;
  h.sample = std::move(s);
  h.record_size = record_size;
  h.capture = std::move(p.capture);
  held_.push_back(std::move(h));
  stats_.held_peak = std::max<uint64_t>(stats_.held_peak, held_.size());
  return true;
}

bool DeferredWalks::Ready(const Held& h, const std::vector<TrackedMapping>& mappings) const {
  if (mappings.empty()) return false;
  const ehp_deferred& st = h.capture.state;
  const uint64_t pc = st.regs[EHP_REG_RIP];
  const TrackedMapping* m = MappingOf(mappings, st.exact ? pc : pc - 1);
  if (!m || !m->file) return true;  // the walk's own verdict, now that the maps are known
  const FileInfo* f = files_->Find(*m->file);
  return !f || f->state != FileInfo::State::kPending;
}

DeferredWalks::Outcome DeferredWalks::Finish(Held& h, uint64_t now_ns) {
  if (now_ns < h.next_try_ns) return Outcome::kWaiting;
  RawSample& s = h.sample;
  const std::vector<TrackedMapping> mappings = tracker_->MappingsFrom(s.pid, s.time_ns);
  if (!Ready(h, mappings)) return Outcome::kWaiting;
  h.next_try_ns = now_ns + options_.retry_ns;
  std::memset(proc_.get(), 0, sizeof(ehp_proc));
  uint32_t n = 0;
  for (const TrackedMapping& m : mappings) {
    if (n == EHP_MAX_MAPPINGS) break;
    proc_->mappings[n++] = EntryMapping(m, m.file ? files_->Find(*m.file) : nullptr);
  }
  proc_->n_mappings = n;
  env_.SetProc(s.pid, proc_.get());
  const ehp_deferred& st = h.capture.state;
  ehp_replay_env env = env_.Env(h.capture.stack.data(), st.regs[EHP_REG_RSP], h.capture.stack.size());
  auto out = std::make_unique<ehp_replay_result>();
  if (ehp_replay_walk_on(&env, &st, s.pid, out.get()) != 0) return Outcome::kWaiting;
  // A file the walk reached beyond the first may still be building; a pc
  // in no mapping may be in one the maps, read again (after an exec, on
  // the walk's EHP_EVENT_UNKNOWN_PC), add.
  if (Deferrable(static_cast<uint8_t>(out->stop_reason))) return Outcome::kWaiting;
  if (Unmapped(static_cast<uint8_t>(out->stop_reason)) && now_ns != UINT64_MAX &&
      now_ns - std::min(now_ns, h.arrived_ns) < options_.settle_ns) {
    return Outcome::kWaiting;
  }
  // Nothing found that the kernel's walk lacked (its pc is in no mapping
  // still): the sample stays as that walk left it.
  if (out->n == 0 && out->stop_reason == s.stop_reason) return Outcome::kUnfinished;
  const uint32_t keep = LateFramesBeforeLoop(s.pid, s.user, h.capture.state, out->frames, out->n, in_loop_);
  s.user.insert(s.user.end(), out->frames, out->frames + keep);
  s.stop_reason = static_cast<uint8_t>(keep < out->n ? static_cast<uint32_t>(EHP_STOP_LATE_RUNTIME) : out->stop_reason);
  s.flags |= EHP_SAMPLE_FINISHED_LATE;
  return Outcome::kFinished;
}

void DeferredWalks::Retry(uint64_t now_ns, bool final, absl::FunctionRef<void(RawSample&&, size_t)> emit) {
  if (held_.empty()) return;
  env_.NewRound();  // tables loaded or unloaded since the last round
  std::deque<Held> waiting;
  for (Held& h : held_) {
    const Outcome o = Finish(h, final ? UINT64_MAX : now_ns);
    const bool expired = now_ns > h.arrived_ns && now_ns - h.arrived_ns > options_.max_hold_ns;
    if (o == Outcome::kWaiting && !final && !expired) {
      waiting.push_back(std::move(h));
      continue;
    }
    if (o == Outcome::kFinished) {
      ++stats_.finished;
    } else {
      ++stats_.unfinished;
    }
    held_bytes_ -= std::min(held_bytes_, h.capture.stack.size());
    if (--held_per_pid_[h.sample.pid] == 0) held_per_pid_.erase(h.sample.pid);
    emit(std::move(h.sample), h.record_size);
  }
  held_ = std::move(waiting);
}

}  // namespace ehprof
