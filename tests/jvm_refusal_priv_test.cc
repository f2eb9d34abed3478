// A JVM whose tables lack a field the walk needs is refused: one warning
// naming the libjvm.so and the field, no jvm_procs entry, its Java frames
// method 0, and `ehprof check` (Found) says why. The JVM is this test
// process with testdata's fakejvm/libjvm.so loaded (HotSpot's tables
// without CodeBlob::_frame_size); reading it goes through
// /proc/PID/map_files like any other process's.
#include <dlfcn.h>
#include <unistd.h>

#include "absl/strings/match.h"
#include "agent/jvm/jvm_tracker.h"
#include "gtest/gtest.h"
#include "tests/memory_map_writer.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

TEST(JvmRefusal, AJvmLackingAFieldIsRefusedOnceNamingIt) {
  const std::string lib = testing::TestdataPath("fakejvm/libjvm.so");
  void* handle = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto* writer = new MemoryMapWriter(sizeof(ehp_jvm_proc), 16, MemoryMapWriter::Kind::kHash);
  Warnings warnings;
  JvmTracker tracker(std::unique_ptr<MapWriter>(writer), &warnings);
  const uint32_t pid = static_cast<uint32_t>(getpid());
  const uint64_t method = reinterpret_cast<uint64_t>(&warnings) & ~uint64_t{7};
  for (uint64_t now : {uint64_t{1}, uint64_t{2'000'000'000}, uint64_t{9'000'000'000}}) {
    std::vector<uint64_t> frames = {EHP_JVM_FRAME(method, 5, 0), EHP_JVM_FRAME(method, 0, 1)};
    tracker.NameFrames(pid, now, &frames);
    EXPECT_EQ(frames[0] & EHP_JVM_METHOD_MASK, 0u);
    EXPECT_EQ(tracker.methods().Name(frames[0]).method, "[jvm: interpreter]");
    EXPECT_EQ(tracker.methods().Name(frames[1]).method, "[jvm: compiled code, method unreadable]");
  }
  const std::vector<std::string> said = warnings.Take();
  ASSERT_EQ(said.size(), 1u) << ::testing::PrintToString(said);
  EXPECT_TRUE(absl::StrContains(said[0], lib)) << said[0];
  EXPECT_TRUE(absl::StrContains(said[0], "no CodeBlob::_frame_size")) << said[0];
  ehp_jvm_proc p;
  EXPECT_FALSE(writer->Read(pid, &p));
  const std::vector<JvmFound> found = tracker.Found();
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].libjvm, lib);
  EXPECT_TRUE(absl::StrContains(found[0].problem, "_frame_size")) << found[0].problem;
  dlclose(handle);
}

}  // namespace
}  // namespace ehprof
