#include "agent/replay/save_captures.h"

#include "absl/strings/str_cat.h"
#include "agent/replay/capture_tables.h"
#include "base/output_target.h"
#include "base/status_macros.h"

namespace ehprof {
namespace {

std::string FileSafe(const std::string& comm) {
  std::string out;
  for (char ch : comm) out += (isalnum(static_cast<unsigned char>(ch)) || ch == '.' || ch == '_') ? ch : '_';
  return out.empty() ? "task" : out;
}

}  // namespace

absl::StatusOr<Capture> MakeCapture(const RawSample& sample, const VerifyCapture& vc,
                                    const ProcessTracker& tracker) {
  const std::vector<TrackedMapping>* mappings = tracker.MappingsAt(sample.pid, sample.time_ns);
  if (!mappings) {
    return absl::NotFoundError(absl::StrCat("no mappings of pid ", sample.pid, " at the capture's time"));
  }
  Capture c;
  c.comm = sample.comm;
  c.pid = sample.pid;
  c.exact = vc.exact;
  std::copy(std::begin(vc.regs), std::end(vc.regs), c.regs);
  for (const TrackedMapping& m : *mappings) {
    c.mappings.push_back({m.start, m.end, m.bias, m.build_id, m.path, std::nullopt});
  }
  c.bpf_stop = sample.stop_reason;
  c.bpf_frames = sample.user;
  c.stack = vc.stack;
  return c;
}

absl::StatusOr<SavedCaptures> SaveCaptures(const std::vector<RawSample>& samples,
                                    const std::vector<VerifyCapture>& captures,
                                    const ProcessTracker& tracker, const std::string& dir) {
  EHP_RETURN_IF_ERROR(MakeOwnDirectory(dir, "--save-captures"));
  SavedCaptures saved;
  CaptureTables tables;
  for (size_t i = 0; i < captures.size(); ++i) {
    const VerifyCapture& vc = captures[i];
    if (vc.sample >= samples.size()) continue;
    auto c = MakeCapture(samples[vc.sample], vc, tracker);
    if (!c.ok()) continue;
    const std::string path = absl::StrCat(dir, "/", FileSafe(c->comm), "-", c->pid, "-", i, ".capture");
    // A capture whose files changed since the sample (or that this machine
    // cannot complete) is not saved: its expected frames would not be
    // libdwfl's of the files the kernel walked.
    auto complete = CompleteCapture(tables, *std::move(c));
    if (!complete.ok()) {
      if (saved.left_out++ == 0) saved.first_left_out = std::string(complete.status().message());
      continue;
    }
    EHP_RETURN_IF_ERROR(WriteCaptureFile(*complete, path));
    ++saved.written;
  }
  return saved;
}

}  // namespace ehprof
