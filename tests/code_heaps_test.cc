// A JVM's code heaps (agent/jvm/code_heaps.h), read from a CodeCache laid
// out in this process's own memory: each heap's range runs to its reserved
// top (VirtualSpace::_high_boundary), not to what it has committed so far
// (_high), which grows as the JIT fills it; the hull spans all heaps; a
// code cache not set up yet is no error; too many heaps, heaps of
// different segment sizes and a range upside down are.
#include "agent/jvm/code_heaps.h"

#include <unistd.h>

#include <cstddef>

#include "gtest/gtest.h"

namespace ehprof {
namespace {

struct FakeSpace {  // VirtualSpace: only the fields the reader looks at
  uint64_t low_boundary = 0, high_boundary = 0, high = 0;
};

struct FakeHeap {  // CodeHeap
  FakeSpace memory, segmap;
  int32_t log2_segment = 6;
};

struct FakeArray {  // GrowableArray<CodeHeap*>
  int32_t len = 0;
  uint64_t data = 0;
};

class CodeHeaps : public ::testing::Test {
 protected:
  void SetUp() override {
    fields_.heaps_addr = reinterpret_cast<uint64_t>(&array_ptr_);
    fields_.array_len = offsetof(FakeArray, len);
    fields_.array_data = offsetof(FakeArray, data);
    fields_.heap_memory = offsetof(FakeHeap, memory);
    fields_.heap_segmap = offsetof(FakeHeap, segmap);
    fields_.heap_log2_segment = offsetof(FakeHeap, log2_segment);
    fields_.space_low_boundary = offsetof(FakeSpace, low_boundary);
    fields_.space_high_boundary = offsetof(FakeSpace, high_boundary);
    // Profiled, non-nmethods and non-profiled code as HotSpot lays them
    // out, each with a little committed and much more reserved.
    const uint64_t base = 0x7f0010000000;
    for (uint64_t i = 0; i < 3; ++i) {
      heaps_[i].memory = {base + i * kReserved, base + (i + 1) * kReserved, base + i * kReserved + 0x40000};
      heaps_[i].segmap = {0x7f0020000000 + i * 0x100000, 0x7f0020000000 + (i + 1) * 0x100000, 0};
      pointers_[i] = reinterpret_cast<uint64_t>(&heaps_[i]);
    }
    array_.len = 3;
    array_.data = reinterpret_cast<uint64_t>(pointers_);
    array_ptr_ = reinterpret_cast<uint64_t>(&array_);
  }

  static constexpr uint64_t kReserved = 0x4000000;
  FakeHeap heaps_[EHP_JVM_HEAPS + 1];
  uint64_t pointers_[EHP_JVM_HEAPS + 1] = {};
  FakeArray array_;
  uint64_t array_ptr_ = 0;
  CodeHeapFields fields_;
  ProcessMemory mem_{getpid()};
};

TEST_F(CodeHeaps, RangesRunToTheReservedTop) {
  ehp_jvm_proc p{};
  auto up = ReadCodeHeaps(mem_, fields_, &p);
  ASSERT_TRUE(up.ok()) << up.status();
  ASSERT_TRUE(*up);
  ASSERT_EQ(p.nheaps, 3);
  EXPECT_EQ(p.log2_segment, 6);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(p.heaps[i].low, heaps_[i].memory.low_boundary);
    // A return address just past what was committed when the heaps were
    // read still lies in the heap: its code may be committed since.
    EXPECT_EQ(p.heaps[i].high, heaps_[i].memory.high_boundary);
    EXPECT_GT(p.heaps[i].high, heaps_[i].memory.high);
    EXPECT_EQ(p.heaps[i].segmap, heaps_[i].segmap.low_boundary);
  }
  EXPECT_EQ(p.code_lo, heaps_[0].memory.low_boundary);
  EXPECT_EQ(p.code_hi, heaps_[2].memory.high_boundary);
}

TEST_F(CodeHeaps, ACodeCacheNotSetUpIsNoErrorYet) {
  ehp_jvm_proc p{};
  array_ptr_ = 0;
  auto up = ReadCodeHeaps(mem_, fields_, &p);
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_FALSE(*up);
  array_ptr_ = reinterpret_cast<uint64_t>(&array_);
  array_.len = 0;
  up = ReadCodeHeaps(mem_, fields_, &p);
  ASSERT_TRUE(up.ok()) << up.status();
  EXPECT_FALSE(*up);
}

TEST_F(CodeHeaps, LayoutsNoCodeCacheHasAreRefused) {
  ehp_jvm_proc p{};
  array_.len = EHP_JVM_HEAPS + 1;
  EXPECT_FALSE(ReadCodeHeaps(mem_, fields_, &p).ok()) << "more heaps than the walk holds";
  array_.len = 3;
  heaps_[1].log2_segment = 7;
  EXPECT_FALSE(ReadCodeHeaps(mem_, fields_, &p).ok()) << "heaps of different segment sizes";
  heaps_[1].log2_segment = 6;
  heaps_[2].memory.high_boundary = heaps_[2].memory.low_boundary - 1;
  EXPECT_FALSE(ReadCodeHeaps(mem_, fields_, &p).ok()) << "a reserved top below the bottom";
  EXPECT_EQ(p.nheaps, 0) << "a refused read leaves the entry as it was";
}

}  // namespace
}  // namespace ehprof
