#include "agent/replay/replay.h"

#include <algorithm>
#include <map>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "agent/replay/replay_maps.h"
#include "agent/replay/walk_replay.h"
#include "agent/resolve/stop_reasons.h"
#include "agent/verify/dwfl_unwinder.h"
#include "base/status_macros.h"
#include "unwind_tables/elf_file.h"

namespace ehprof {
namespace {

uint64_t Addr(uint64_t frame) { return frame & EHP_FRAME_ADDR_MASK; }

// Whether the kernel's walk of c looked m up: a frame's pc (or a return
// address - 1, where the walk looks it up) lies in it.
[[maybe_unused]] bool HoldsAFrame(const Capture& c, const CaptureMapping& m) {
  auto in = [&](uint64_t a) { return a >= m.start && a < m.end; };
  if (in(c.regs[EHP_REG_RIP])) return true;
  for (uint64_t f : c.bpf_frames) {
    const uint64_t a = Addr(f);
    if (in(a) || (a > 0 && in(a - 1))) return true;
  }
  return false;
}

}  // namespace

bool ReplayResult::AgreesWithLibdwfl() const {
  return frames.size() == libdwfl.size() && agree == frames.size();
}

bool ReplayResult::MatchesRecorded(const Capture& c) const {
  return frames == c.bpf_frames && stop == c.bpf_stop;
}

std::string ReplayFilePath(const std::string& path, const ReplayOptions& o) {
  if (absl::StartsWith(path, kTestdataPrefix)) {
    return absl::StrCat(o.testdata_dir, "/", path.substr(sizeof(kTestdataPrefix) - 1));
  }
  if (path.empty() || path[0] != '/' || absl::StartsWith(path, "//")) return "";
  return path;
}

Replayer::Replayer(ReplayOptions o) : options_(std::move(o)), maps_(std::make_unique<ReplayMaps>()) {}
Replayer::~Replayer() = default;

absl::StatusOr<uint32_t> Replayer::Table(const std::string& file, const CaptureMapping& m) {
  auto known = build_ids_.find(file);
  if (known == build_ids_.end()) {
    auto elf = ElfFile::Open(file);
    if (!elf.ok()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "the capture maps ", m.path, ", which this machine cannot read: ", elf.status().message()));
    }
    known = build_ids_.emplace(file, elf->BuildId()).first;
  }
  const std::string& have = known->second;
  if (have != m.build_id) {
    return absl::FailedPreconditionError(absl::StrCat(
        file, ": build-id ", have.empty() ? "(none)" : have, " on this machine, ",
        m.build_id.empty() ? "(none)" : m.build_id,
        " in the capture: the stack's return addresses belong to the other build (record the "
        "capture again)"));
  }
  auto it = tables_.find(file);
  if (it != tables_.end()) return it->second;
  auto id = maps_->LoadTable(file);
  if (!id.ok()) {
    return absl::Status(id.status().code(), absl::StrCat("table of ", file, ": ", id.status().message()));
  }
  tables_.emplace(file, *id);
  return *id;
}

absl::StatusOr<ReplayResult> ReplayCapture(const Capture& c, const ReplayOptions& o) {
  Replayer r(o);
  return r.Replay(c);
}

absl::StatusOr<ReplayResult> Replayer::Replay(const Capture& c) {
#if !EHPROF_WALK_REPLAY
  return absl::UnimplementedError(
      "replay: the walk's C build covers x86-64 only; this ehprof is built for another architecture");
#else
  const ReplayOptions& o = options_;
  ReplayMaps& maps = *maps_;
  auto proc = std::make_unique<ehp_proc>();
  std::vector<CaptureMapping> sorted = c.mappings;
  std::sort(sorted.begin(), sorted.end(),
            [](const CaptureMapping& a, const CaptureMapping& b) { return a.start < b.start; });
  std::vector<DwflMapping> dwfl_mappings;
  std::vector<std::string> notes;
  for (const CaptureMapping& m : sorted) {
    ehp_mapping& out = proc->mappings[proc->n_mappings];
    out.begin = m.start;
    out.end = m.end;
    out.bias = m.bias;
    const std::string file = ReplayFilePath(m.path, o);
    if (!file.empty()) {
      auto id = Table(file, m);
      if (!id.ok() && (!absl::IsFailedPrecondition(id.status()) || HoldsAFrame(c, m))) {
        return id.status();
      }
      if (id.ok()) {
        out.table_id = *id;
        out.flags = EHP_MAPPING_HAS_TABLE;
        dwfl_mappings.push_back({m.start, m.end, m.bias, file});
      } else {
        // No frame the kernel found is in it, so its walk never looked at
        // its table: the replay goes without (a walk that strays there now
        // differs from the kernel's, which the comparison shows).
        notes.push_back(absl::StrCat(id.status().message(), "; no frame of the capture is in it: replayed without it"));
      }
    }
    if (++proc->n_mappings == EHP_MAX_MAPPINGS) break;
  }
  maps.SetProc(c.pid, std::move(proc));

  ehp_replay_env env{};
  env.lookup = &ReplayMaps::Lookup;
  env.ctx = &maps;
  env.stack = c.stack.data();
  env.stack_lo = c.regs[EHP_REG_RSP];
  env.stack_len = c.stack.size();
  auto walked = std::make_unique<ehp_replay_result>();
  if (ehp_replay_walk(&env, c.regs, c.exact, c.pid, walked.get()) != 0) {
    return absl::ResourceExhaustedError("replay: out of memory for the walk's scratch");
  }
  ReplayResult r;
  r.notes = std::move(notes);
  r.frames.assign(walked->frames, walked->frames + walked->n);
  r.stop = walked->stop_reason;
  r.read_end = env.read_end;
  if (!o.libdwfl) return r;

  DwflUnwinder dwfl(std::move(dwfl_mappings));
  StackCapture sc;
  std::copy(std::begin(c.regs), std::end(c.regs), sc.regs);
  sc.stack = c.stack;
  sc.exact = c.exact;
  EHP_ASSIGN_OR_RETURN(r.libdwfl, dwfl.Unwind(sc, EHP_MAX_USER_FRAMES));
  r.libdwfl_stop = dwfl.last_stop();
  for (size_t i = 0; i < std::min(r.frames.size(), r.libdwfl.size()); ++i) {
    if (Addr(r.frames[i]) == r.libdwfl[i]) ++r.agree;
  }
  return r;
#endif  // EHPROF_WALK_REPLAY
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
  for (const std::string& note : r.notes) out += "note: " + note + "\n";
  return out;
}

}  // namespace ehprof
