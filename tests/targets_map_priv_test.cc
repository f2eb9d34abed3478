// AddTarget against a real BPF hash map: a full map is an error naming the
// pid or tid, as `ehprof record -p` reports it, never a silent miss.
#include "agent/record/targets_map.h"

#include <bpf/bpf.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "agent/session/bpf_map_writer.h"
#include "base/unique_fd.h"
#include "bpf/ehprof_abi.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

// A targets map like bpf/maps.bpf.h's, holding only `entries`.
UniqueFd SmallTargetsMap(uint32_t entries) {
  return UniqueFd(bpf_map_create(BPF_MAP_TYPE_HASH, "test_targets", sizeof(uint32_t), sizeof(uint8_t),
                                 entries, nullptr));
}

TEST(TargetsMap, FullMapNamesThePidThatIsNotSampled) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  UniqueFd map = SmallTargetsMap(2);
  ASSERT_TRUE(map.valid()) << "bpf_map_create: " << std::strerror(errno);
  BpfMapWriter targets(map.get(), sizeof(uint8_t), "targets");
  EXPECT_TRUE(AddTarget(targets, 100, EHP_TARGET_PROCESS).ok());
  EXPECT_TRUE(AddTarget(targets, 101, EHP_TARGET_THREAD).ok());
  // Updating a present key needs no new entry.
  EXPECT_TRUE(AddTarget(targets, 100, EHP_TARGET_PROCESS).ok());

  absl::Status full = AddTarget(targets, 4242, EHP_TARGET_PROCESS);
  EXPECT_TRUE(absl::IsResourceExhausted(full)) << full;
  EXPECT_NE(full.message().find("pid 4242"), std::string::npos) << full;
  EXPECT_NE(full.message().find("targets map is full"), std::string::npos) << full;
  absl::Status tid = AddTarget(targets, 4343, EHP_TARGET_THREAD);
  EXPECT_NE(tid.message().find("tid 4343"), std::string::npos) << tid;

  uint32_t key = 4242;
  uint8_t value = 0;
  EXPECT_NE(bpf_map_lookup_elem(map.get(), &key, &value), 0) << "4242 was added after all";
}

TEST(TargetsMap, OtherFailuresNameThePidAndTheReason) {
  BpfMapWriter no_map(-1, sizeof(uint8_t), "targets");
  absl::Status s = AddTarget(no_map, 77, EHP_TARGET_PROCESS);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("pid 77"), std::string::npos) << s;
  EXPECT_NE(s.message().find("Bad file descriptor"), std::string::npos) << s;
}

}  // namespace
}  // namespace ehprof
