// AddTarget's errors without root, through an in-memory hash map: a full
// map names the pid or tid left unsampled; another failure keeps its
// reason. tests/targets_map_priv_test.cc does the same on a real BPF map.
#include "agent/record/targets_map.h"

#include <string>

#include "bpf/ehprof_abi.h"
#include "gtest/gtest.h"
#include "tests/memory_map_writer.h"

namespace ehprof {
namespace {

TEST(TargetsMapMemory, WritesTheKindAndAFullMapNamesTheTid) {
  MemoryMapWriter targets(sizeof(uint8_t), 1, MemoryMapWriter::Kind::kHash);
  ASSERT_TRUE(AddTarget(targets, 100, EHP_TARGET_THREAD).ok());
  EXPECT_EQ(targets.Get<uint8_t>(100), EHP_TARGET_THREAD);

  absl::Status full = AddTarget(targets, 4343, EHP_TARGET_THREAD);
  EXPECT_TRUE(absl::IsResourceExhausted(full)) << full;
  EXPECT_NE(full.message().find("tid 4343"), std::string::npos) << full;
  EXPECT_NE(full.message().find("targets map is full"), std::string::npos) << full;
  EXPECT_FALSE(targets.Has(4343));
}

TEST(TargetsMapMemory, AnotherFailureKeepsItsReason) {
  MemoryMapWriter targets(sizeof(uint8_t), 16, MemoryMapWriter::Kind::kHash);
  targets.FailAfter(0);
  absl::Status s = AddTarget(targets, 77, EHP_TARGET_PROCESS);
  EXPECT_TRUE(absl::IsInternal(s)) << s;
  EXPECT_NE(s.message().find("pid 77"), std::string::npos) << s;
  EXPECT_NE(s.message().find("injected failure"), std::string::npos) << s;
}

}  // namespace
}  // namespace ehprof
