// `ehprof replay CAPTURE...`: the BPF walk of saved --verify captures run
// again in user space, beside libdwfl's unwind of the same stack bytes.
#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "agent/cli/cli.h"
#include "agent/replay/replay.h"

namespace ehprof {
namespace {

constexpr char kDescription[] = R"(Replays captures saved by `ehprof record --verify --save-captures DIR`: the
BPF walk's own C source, compiled for user space, walks the captured stack
with tables built from this machine's copies of the captured files, and
libdwfl unwinds the same bytes. Prints both walks and the kernel's recorded
one frame by frame, then the agreement. No privileges needed. A file that
holds one of the capture's frames and whose build-id differs from the
capture's is an error naming it; such a file holding none is left out, with
a note.
)";

struct Totals {
  size_t captures = 0, replayed = 0, agree = 0, match_kernel = 0;
  size_t frames_agree = 0, frames = 0;
};

}  // namespace

int RunReplayCommand(const std::vector<std::string>& args) {
  std::vector<std::string> files;
  ReplayOptions options;
  bool summary = false;
  auto app = NewCommandApp("replay", kDescription);
  app->add_option("--testdata", options.testdata_dir,
                  "where captures' @testdata/ programs are (ehprof's build tree, testdata/)")
      ->type_name("DIR");
  app->add_flag("--summary", summary, "print only the totals");
  app->add_option("CAPTURES", files, "capture files")->type_name("")->required();
  if (auto exit = ParseCommandLine(*app, args)) return *exit;
  Totals t;
  Replayer replayer(options);
  for (const std::string& path : files) {
    ++t.captures;
    auto c = ReadCaptureFile(path);
    auto r = c.ok() ? replayer.Replay(*c) : absl::StatusOr<ReplayResult>(c.status());
    if (!r.ok()) {
      std::fprintf(stderr, "ehprof replay: %s: %s\n", path.c_str(), std::string(r.status().message()).c_str());
      continue;
    }
    ++t.replayed;
    t.agree += r->AgreesWithLibdwfl();
    t.match_kernel += r->MatchesRecorded(*c);
    t.frames_agree += r->agree;
    t.frames += std::max(r->frames.size(), r->libdwfl.size());
    if (!summary) {
      std::cout << path << " (" << c->comm << ")\n" << FormatReplay(*c, *r) << "\n";
    } else {
      for (const std::string& note : r->notes) std::fprintf(stderr, "ehprof replay: %s: %s\n", path.c_str(), note.c_str());
    }
  }
  std::cout << absl::StrFormat(
      "ehprof replay: %d captures, %d replayed; %d agree with libdwfl on every frame, frames "
      "agreeing %d of %d; %d replays equal the kernel's recorded walk\n",
      t.captures, t.replayed, t.agree, t.frames_agree, t.frames, t.match_kernel);
  std::cout.flush();
  return t.replayed == t.captures ? kExitOk : kExitFailure;
}

}  // namespace ehprof
