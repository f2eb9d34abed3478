#include "bpf/host/replay.h"

#include <algorithm>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "bpf/stop_reasons.h"

namespace ehprof {
namespace {

uint64_t Addr(uint64_t frame) { return frame & EHP_FRAME_ADDR_MASK; }

}  // namespace

bool ReplayResult::AgreesWithLibdwfl() const {
  return frames.size() == libdwfl.size() && agree == frames.size();
}

bool ReplayResult::MatchesRecorded(const Capture& c) const {
  return frames == c.bpf_frames && stop == c.bpf_stop;
}

void ReplayResult::CountAgreement() {
  agree = 0;
  for (size_t i = 0; i < std::min(frames.size(), libdwfl.size()); ++i) {
    if (Addr(frames[i]) == libdwfl[i]) ++agree;
  }
}

ReplayResult ReplayWalk(HostMaps& maps, const Capture& c) {
  auto proc = std::make_unique<ehp_proc>();
  std::vector<CaptureMapping> sorted = c.mappings;
  std::sort(sorted.begin(), sorted.end(),
            [](const CaptureMapping& a, const CaptureMapping& b) { return a.start < b.start; });
  for (const CaptureMapping& m : sorted) {
    ehp_mapping& out = proc->mappings[proc->n_mappings];
    out.begin = m.start;
    out.end = m.end;
    out.bias = m.bias;
    if (m.table_id) {
      out.table_id = *m.table_id;
      out.flags = EHP_MAPPING_HAS_TABLE;
    }
    if (++proc->n_mappings == EHP_MAX_MAPPINGS) break;
  }
  maps.SetProc(c.pid, std::move(proc));

  ehp_replay_env env = maps.Env();
  env.stack = c.stack.data();
  env.stack_lo = c.regs[EHP_REG_RSP];
  env.stack_len = c.stack.size();
  auto walked = std::make_unique<ehp_replay_result>();
  ReplayResult r;
  if (ehp_replay_walk(&env, c.regs, c.exact, c.pid, walked.get()) != 0) {
    // Out of memory for the walk's scratch: nothing walked.
    r.stop = EHP_STOP_REASON_COUNT;
    return r;
  }
  r.frames.assign(walked->frames, walked->frames + walked->n);
  r.stop = walked->stop_reason;
  r.read_end = env.read_end;
  return r;
}

absl::StatusOr<ReplayResult> ReplayCapture(const Capture& c) {
  HostMaps maps;
  for (const CaptureEntry& e : c.entries) {
    EHP_RETURN_IF_ERROR(maps.map(e.map).Write(e.key, e.offset, e.bytes.data(), e.bytes.size()));
  }
  ReplayResult r = ReplayWalk(maps, c);
  if (r.stop >= EHP_STOP_REASON_COUNT) {
    return absl::ResourceExhaustedError("replay: out of memory for the walk's scratch");
  }
  r.libdwfl = c.libdwfl_frames;
  r.libdwfl_stop = c.libdwfl_stop;
  r.CountAgreement();
  return r;
}

std::string FormatReplay(const Capture& c, const ReplayResult& r) {
  std::string out = absl::StrFormat("%-4s %-20s %-20s %s\n", "#", "replayed walk", "libdwfl",
                                    "recorded in the kernel");
  const size_t n = std::max({r.frames.size(), r.libdwfl.size(), c.bpf_frames.size()});
  auto cell = [](const std::vector<uint64_t>& v, size_t i) {
    return i < v.size() ? absl::StrFormat("%#x", Addr(v[i])) : std::string("-");
  };
  for (size_t i = 0; i < n; ++i) {
    const bool same = i < r.frames.size() && i < r.libdwfl.size() && Addr(r.frames[i]) == r.libdwfl[i];
    absl::StrAppendFormat(&out, "%-4d %-20s %-20s %s%s\n", i, cell(r.frames, i), cell(r.libdwfl, i),
                          cell(c.bpf_frames, i), same ? "" : "  <- differs");
  }
  absl::StrAppendFormat(&out, "replayed walk: %d frames, stop %s\n", r.frames.size(),
                        StopReasonName(r.stop));
  absl::StrAppendFormat(&out, "libdwfl: %d frames, stop %s\n", r.libdwfl.size(),
                        r.libdwfl_stop.empty() ? "end of stack" : r.libdwfl_stop);
  absl::StrAppendFormat(&out, "agreement with libdwfl: %d of %d frames%s\n", r.agree,
                        std::max(r.frames.size(), r.libdwfl.size()),
                        r.AgreesWithLibdwfl() ? " (all)" : "");
  absl::StrAppendFormat(&out, "replay %s the kernel's recorded walk\n",
                        r.MatchesRecorded(c) ? "equals" : "DIFFERS FROM");
  return out;
}

}  // namespace ehprof
