// A kernel that lacks a feature is refused with the feature and the Linux
// version that has it named, never a verifier or relocation error.
#include "agent/session/kernel_features.h"

#include <string>
#include <vector>

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

}  // namespace
}  // namespace ehprof
