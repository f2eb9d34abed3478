// A kernel that lacks a feature is refused with the feature and the Linux
// version that has it named, never a verifier or relocation error.
#include "agent/session/kernel_features.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "bpf/ehprof_abi.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

KernelFeature Make(const std::string& name, const std::string& since, bool present) {
  KernelFeature f;
  f.name = name;
  f.since = since;
  f.why = "a reason";
  f.present = present;
  return f;
}

TEST(KernelFeatures, AllPresentIsOk) {
  EXPECT_TRUE(CheckKernelFeatures({Make("bpf_loop", "5.17", true)}).ok());
}

TEST(KernelFeatures, EachMissingFeatureIsNamedWithItsVersion) {
  absl::Status s = CheckKernelFeatures({Make("ring buffer maps", "5.8", true),
                                        Make("bpf_task_pt_regs", "5.15", false),
                                        Make("bpf_loop", "5.17", false)});
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  std::string m(s.message());
  EXPECT_THAT(m, HasSubstr("bpf_task_pt_regs (Linux 5.15+"));
  EXPECT_THAT(m, HasSubstr("bpf_loop (Linux 5.17+"));
  EXPECT_THAT(m, Not(HasSubstr("ring buffer")));
  EXPECT_THAT(m, HasSubstr(KernelRelease()));
  EXPECT_THAT(m, Not(HasSubstr("verifier")));
}

TEST(KernelFeatures, AProbeThatCouldNotRunSaysSo) {
  KernelFeature f = Make("bpf_loop", "5.17", false);
  f.detail = "probe failed: Operation not permitted";
  absl::Status s = CheckKernelFeatures({f});
  EXPECT_THAT(std::string(s.message()), HasSubstr("probe failed: Operation not permitted"));
}

// bpf_loop, bpf_task_pt_regs and bpf_get_current_task_btf missing (5.10):
// not a refusal but the tail-call build, as deep as the bpf_loop walk.
TEST(KernelFeatures, LoopBuildOnlyFeaturesChooseTheTailCallBuild) {
  KernelFeature loop = Make("bpf_loop", "5.17", false);
  loop.loop_build_only = true;
  KernelFeature regs = Make("bpf_task_pt_regs", "5.15", false);
  regs.loop_build_only = true;
  const std::vector<KernelFeature> old = {Make("ring buffer maps", "5.8", true), regs, loop};
  EXPECT_TRUE(CheckKernelFeatures(old).ok());
  EXPECT_TRUE(NeedsTailCallBuild(old));
  const std::string line = WalkBuildLine(old);
  EXPECT_THAT(line, HasSubstr("tail calls (bpf_task_pt_regs, bpf_loop missing)"));
  EXPECT_THAT(line, HasSubstr("up to " + std::to_string(EHP_TAIL_MAX_USER_FRAMES) + " frames"));
  EXPECT_GE(EHP_TAIL_MAX_USER_FRAMES, EHP_MAX_USER_FRAMES);

  loop.present = regs.present = true;
  const std::vector<KernelFeature> now = {regs, loop};
  EXPECT_FALSE(NeedsTailCallBuild(now));
  EXPECT_THAT(WalkBuildLine(now), HasSubstr("bpf_loop"));
}

TEST(KernelFeatures, AFeatureBothBuildsNeedStillRefuses) {
  KernelFeature loop = Make("bpf_loop", "5.17", false);
  loop.loop_build_only = true;
  absl::Status s = CheckKernelFeatures({Make("ring buffer maps", "5.8", false), loop});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(std::string(s.message()), HasSubstr("ring buffer maps (Linux 5.8+"));
  EXPECT_THAT(std::string(s.message()), Not(HasSubstr("bpf_loop")));
}

// EHPROF_PRETEND_OLD_KERNEL=1: the three helpers taken as absent without a
// probe (so the tail-call build can be tested on a new kernel).
TEST(KernelFeatures, PretendingAnOldKernelMarksTheLoopBuildsHelpersAbsent) {
  setenv("EHPROF_PRETEND_OLD_KERNEL", "1", 1);
  const std::vector<KernelFeature> features = ProbeKernelFeatures();
  unsetenv("EHPROF_PRETEND_OLD_KERNEL");
  int pretended = 0;
  for (const KernelFeature& f : features) {
    if (!f.loop_build_only) continue;
    EXPECT_FALSE(f.present) << f.name;
    EXPECT_THAT(f.detail, HasSubstr("EHPROF_PRETEND_OLD_KERNEL")) << f.name;
    ++pretended;
  }
  EXPECT_EQ(pretended, 3);
  EXPECT_TRUE(NeedsTailCallBuild(features));
}

}  // namespace
}  // namespace ehprof
