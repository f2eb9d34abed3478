#include "bpf/stop_reasons.h"

#include <set>
#include <string>

#include "gtest/gtest.h"

namespace ehprof {
namespace {

TEST(StopReasons, EveryReasonHasItsOwnName) {
  std::set<std::string> names;
  for (unsigned r = 0; r < EHP_STOP_REASON_COUNT; ++r) {
    const std::string name = StopReasonName(r);
    EXPECT_NE(name, "unknown") << r;
    EXPECT_TRUE(names.insert(name).second) << name;
  }
  EXPECT_STREQ(StopReasonName(EHP_STOP_REASON_COUNT), "unknown");
}

TEST(StopReasons, NamesMatchTheSummariesSoFar) {
  EXPECT_STREQ(StopReasonName(EHP_STOP_END_OF_STACK), "end of stack");
  EXPECT_STREQ(StopReasonName(EHP_STOP_NO_USER_STACK), "no user stack (kernel thread, exiting, exec replacing it)");
  EXPECT_STREQ(StopReasonName(EHP_STOP_NOT_WALKED), "user stack not requested");
  // hostile_lockup_priv_test finds cut walks by this name.
  EXPECT_STREQ(StopReasonName(EHP_STOP_TIME_BUDGET), "time budget spent");
}

}  // namespace
}  // namespace ehprof
