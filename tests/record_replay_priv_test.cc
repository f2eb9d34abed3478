// `ehprof record --verify --save-captures`: the saved captures replay in user
// space from their own tables (bpf/host/) to exactly the walk the kernel
// recorded, and agree with the libdwfl frames saved with them. Records testdata programs, so it needs root.
#include <dirent.h>

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "bpf/host/replay.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RunEhprof;
using testing::TestdataPath;

class RecordReplay : public testing::RecordingTest {
 protected:
  // Returns how many captures the kernel walked through the vDSO; the
  // captures' count in *captures.
  size_t RecordAndReplay(const std::string& program, size_t* captures = nullptr);
};

std::vector<std::string> CaptureFiles(const std::string& dir) {
  std::vector<std::string> out;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      if (absl::EndsWith(e->d_name, ".capture")) out.push_back(dir + "/" + e->d_name);
    }
    closedir(d);
  }
  return out;
}

size_t RecordReplay::RecordAndReplay(const std::string& program, size_t* captures) {
  const std::string dir = dir_ + "/captures";
  auto r = RunEhprof({"record", "-F", "199", "--verify=2", "--save-captures", dir, "-o",
                      dir_ + "/out.folded", "--", TestdataPath(program), "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> files = CaptureFiles(dir);
  if (captures) *captures = files.size();
  EXPECT_GE(files.size(), 10u) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "captures saved in " + dir)) << r.err;
  size_t equal = 0, agree = 0, unmapped = 0, late = 0, in_vdso = 0;
  for (const std::string& f : files) {
    auto c = ReadCaptureFile(f);
    auto rr = c.ok() ? ReplayCapture(*c) : c.status();
    if (!rr.ok()) {
      ADD_FAILURE() << f << ": " << rr.status();
      continue;
    }
    // A sample in the program's first milliseconds can find a library not
    // yet known to the kernel (its mapping or its table); the replay has
    // the capture's whole mapping list and every table, so it goes on where
    // the kernel stopped, through the same frames first.
    const bool kernel_late = c->bpf_stop == EHP_STOP_NO_TABLE || c->bpf_stop == EHP_STOP_NO_MAPPING;
    // A walk through the vDSO (sig_handler's clock_gettime, at the leaf
    // or interrupted by the signal): the kernel has the vDSO's table
    // (bpf/proc_learn.bpf.h), the capture the same one, built from the
    // recording agent's own vDSO, and libdwfl that image: all go on.
    in_vdso += std::any_of(c->mappings.begin(), c->mappings.end(), [&](const CaptureMapping& m) {
      return m.path == "[vdso]" && std::any_of(c->bpf_frames.begin(), c->bpf_frames.end(), [&](uint64_t f) {
               const uint64_t a = f & EHP_FRAME_ADDR_MASK;
               return m.start <= a && a < m.end;
             });
    });
    if (kernel_late && rr->frames.size() > c->bpf_frames.size() &&
        std::equal(c->bpf_frames.begin(), c->bpf_frames.end(), rr->frames.begin())) {
      ++late;
    } else {
      EXPECT_TRUE(rr->MatchesRecorded(*c)) << f << "\nkernel's stop " << c->bpf_stop << ", replay's "
                                           << rr->stop << "\n" << FormatReplay(*c, *rr);
      equal += rr->MatchesRecorded(*c);
    }
    // A sample before the kernel knew a new mapping (jit_sim's code, just
    // mmapped) stops there, as recorded; libdwfl goes on by rbp.
    if (rr->stop == EHP_STOP_NO_MAPPING) {
      ++unmapped;
      continue;
    }
    EXPECT_TRUE(rr->AgreesWithLibdwfl()) << f << "\n" << FormatReplay(*c, *rr);
    agree += rr->AgreesWithLibdwfl();
  }
  // The replay is the kernel's code on the kernel's bytes: every one equal
  // but the few taken before the kernel knew a library.
  EXPECT_LE(late, 2u);
  EXPECT_EQ(equal + late, files.size());
  // libdwfl, the outside reference, agrees on every frame of the others.
  EXPECT_LE(unmapped, 2u);
  EXPECT_EQ(agree + unmapped, files.size());
  std::printf("%s: %zu captures, %zu replays equal the kernel's walk (%zu taken before the kernel "
              "knew a library go on further), %zu agree with libdwfl, %zu stopped at a mapping not "
              "yet known, %zu through the vDSO\n",
              program.c_str(), files.size(), equal, late, agree, unmapped, in_vdso);
  return in_vdso;
}

TEST_F(RecordReplay, SignalHandlerCapturesReplayAsRecorded) { RecordAndReplay("sig_handler"); }
TEST_F(RecordReplay, PltCapturesReplayAsRecorded) { RecordAndReplay("plt_spin"); }
TEST_F(RecordReplay, JitCapturesReplayAsRecorded) { RecordAndReplay("jit_sim"); }
// vdso_spin: most leaves in the vDSO, most signal frames on top of it; the
// capture carries the vDSO's table, libdwfl reads the same image.
TEST_F(RecordReplay, VdsoCapturesReplayAsRecorded) {
  size_t captures = 0;
  const size_t through = RecordAndReplay("vdso_spin", &captures);
  EXPECT_GE(through, captures / 2);
}

TEST_F(RecordReplay, SaveCapturesNeedsVerify) {
  auto r = RunEhprof({"record", "--save-captures", dir_ + "/c", "--", TestdataPath("sig_handler"), "0.1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(r.err, "--save-captures needs --verify")) << r.err;
}

}  // namespace
}  // namespace ehprof
