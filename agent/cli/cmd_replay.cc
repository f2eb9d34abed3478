// `ehprof replay CAPTURE...`: the BPF walk of saved --verify captures run
// again in user space from the captures' own tables, beside the frames
// libdwfl found in the same stack bytes when they were recorded.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "agent/cli/cli.h"
#include "bpf/host/replay.h"

namespace ehprof {
namespace {

constexpr char kDescription[] = R"(Replays captures saved by `ehprof record --verify --save-captures DIR`: the
BPF walk's own C source, compiled for user space, walks the captured stack
over the table entries the capture carries. Prints the replay, libdwfl's
unwind of the same bytes on the recording machine and the kernel's recorded
walk frame by frame, then the agreement. Needs neither privileges nor the
captured files: a capture replays on any machine.
)";

struct Totals {
  size_t captures = 0, replayed = 0, agree = 0, match_kernel = 0;
  size_t frames_agree = 0, frames = 0;
};

}  // namespace

int RunReplayCommand(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  bool summary = false;
  auto app = NewCommandApp("replay", kDescription);
  app->add_flag("--summary", summary, "print only the totals");
  app->add_option("CAPTURES", files, "capture files")->type_name("")->required();
  if (auto exit = ParseCommandLine(*app, args)) return *exit;
  Totals t;
  for (const std::string& path : files) {
    ++t.captures;
    auto c = ReadCaptureFile(path);
    auto r = c.ok() ? ReplayCapture(*c) : absl::StatusOr<ReplayResult>(c.status());
    if (!r.ok()) {
      std::fprintf(stderr, "ehprof replay: %s: %s\n", path.c_str(), std::string(r.status().message()).c_str());
      continue;
    }
    ++t.replayed;
    t.agree += r->AgreesWithLibdwfl();
    t.match_kernel += r->MatchesRecorded(*c);
    t.frames_agree += r->agree;
    t.frames += std::max(r->frames.size(), r->libdwfl.size());
    if (!summary) std::cout << path << " (" << c->comm << ")\n" << FormatReplay(*c, *r) << "\n";
  }
  std::cout << absl::StrFormat(
      "ehprof replay: %d captures, %d replayed; %d agree with libdwfl on every frame, frames "
      "agreeing %d of %d; %d replays equal the kernel's recorded walk\n",
      t.captures, t.replayed, t.agree, t.frames_agree, t.frames, t.match_kernel);
  std::cout.flush();
  return t.replayed == t.captures ? kExitOk : kExitFailure;
}

}  // namespace ehprof
