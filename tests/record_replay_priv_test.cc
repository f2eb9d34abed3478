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
  void RecordAndReplay(const std::string& program);
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

void RecordReplay::RecordAndReplay(const std::string& program) {
  const std::string dir = dir_ + "/captures";
  auto r = RunEhprof({"record", "-F", "199", "--verify=2", "--save-captures", dir, "-o",
                      dir_ + "/out.folded", "--", TestdataPath(program), "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> files = CaptureFiles(dir);
  ASSERT_GE(files.size(), 10u) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "captures saved in " + dir)) << r.err;
  size_t equal = 0, agree = 0, unmapped = 0, late = 0, in_vdso = 0;
  for (const std::string& f : files) {
    auto c = ReadCaptureFile(f);
    ASSERT_TRUE(c.ok()) << c.status();
    auto rr = ReplayCapture(*c);
    ASSERT_TRUE(rr.ok()) << f << ": " << rr.status();
    // A sample in the program's first milliseconds can find a library not
    // yet known to the kernel (its mapping or its table); the replay has
    // the capture's whole mapping list and every table, so it goes on where
    // the kernel stopped, through the same frames first.
    const bool kernel_late = c->bpf_stop == EHP_STOP_NO_TABLE || c->bpf_stop == EHP_STOP_NO_MAPPING;
    // A leaf in the vDSO (sig_handler's clock_gettime): the kernel has the
    // vDSO's table (bpf/proc_learn.bpf.h), the replay no file to build one
    // from, nor libdwfl: neither can step out of it. Counted apart.
    const uint64_t pc = c->regs[EHP_REG_RIP];
    if (std::any_of(c->mappings.begin(), c->mappings.end(), [&](const CaptureMapping& m) {
          return m.path == "[vdso]" && m.start <= pc && pc < m.end;
        })) {
      ++in_vdso;
      continue;
    }
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
  EXPECT_LE(in_vdso, files.size() / 20);
  EXPECT_EQ(equal + late + in_vdso, files.size());
  // libdwfl, the outside reference, agrees on every frame of the others.
  EXPECT_LE(unmapped, 2u);
  EXPECT_EQ(agree + unmapped + in_vdso, files.size());
  std::printf("%s: %zu captures, %zu replays equal the kernel's walk (%zu taken before the kernel "
              "knew a library go on further), %zu agree with libdwfl, %zu stopped at a mapping not "
              "yet known, %zu with their leaf in the vDSO\n",
              program.c_str(), files.size(), equal, late, agree, unmapped, in_vdso);
}

TEST_F(RecordReplay, SignalHandlerCapturesReplayAsRecorded) { RecordAndReplay("sig_handler"); }
TEST_F(RecordReplay, PltCapturesReplayAsRecorded) { RecordAndReplay("plt_spin"); }
TEST_F(RecordReplay, JitCapturesReplayAsRecorded) { RecordAndReplay("jit_sim"); }

TEST_F(RecordReplay, SaveCapturesNeedsVerify) {
  auto r = RunEhprof({"record", "--save-captures", dir_ + "/c", "--", TestdataPath("sig_handler"), "0.1"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_TRUE(absl::StrContains(r.err, "--save-captures needs --verify")) << r.err;
}

}  // namespace
}  // namespace ehprof
