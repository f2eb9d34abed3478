// Where a walk finished late (agent/deferred) is cut: at the first native
// frame in an interpreter's loop, whose runtime frames that walk cannot
// read (agent/interp/interp_loops.h, LateFramesBeforeLoop).
#include <cstdint>
#include <map>
#include <vector>

#include "agent/deferred/deferred_walks.h"
#include "agent/interp/interp_loops.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

constexpr uint32_t kPid = 42;
constexpr uint64_t kLoopBegin = 0x5000, kLoopEnd = 0x6000;

LoopTest Loop() {
  return [](uint32_t pid, uint64_t pc) { return pid == kPid && pc >= kLoopBegin && pc < kLoopEnd; };
}

ehp_deferred StoppedAt(uint64_t pc, bool exact) {
  ehp_deferred at{};
  at.regs[EHP_REG_RIP] = pc;
  at.exact = exact;
  return at;
}

TEST(LateFramesBeforeLoop, CutAtTheFirstReturnAddressWhoseCallIsInTheLoop) {
  // Return addresses: 0x5000's call is the byte before, outside the loop;
  // 0x6000's is its last byte, inside.
  const std::vector<uint64_t> late = {0x1234, 0x5000, 0x7000, 0x6000, 0x5800};
  const std::vector<uint64_t> kernel = {EHP_INTERP_FRAME(EHP_INTERP_PHP, 0x1000, 3), 0x5100 | EHP_FRAME_EXACT};
  EXPECT_EQ(LateFramesBeforeLoop(kPid, kernel, StoppedAt(0x5100, true), late.data(), 5, Loop()), 3u);
  // An exact pc (the frame-pointer fallback's bit aside) is tested as it is.
  const std::vector<uint64_t> exact = {0x5000 | EHP_FRAME_EXACT | EHP_FRAME_FP};
  EXPECT_EQ(LateFramesBeforeLoop(kPid, kernel, StoppedAt(0x100, true), exact.data(), 1, Loop()), 0u);
}

TEST(LateFramesBeforeLoop, NothingCutOutsideLoopsOrWithoutATest) {
  const std::vector<uint64_t> late = {0x1234, 0x7000, 0x5800};
  EXPECT_EQ(LateFramesBeforeLoop(kPid + 1, {}, StoppedAt(0x5800, true), late.data(), 3, Loop()), 3u);
  EXPECT_EQ(LateFramesBeforeLoop(kPid, {}, StoppedAt(0x5800, true), late.data(), 3, LoopTest()), 3u);
  EXPECT_EQ(LateFramesBeforeLoop(kPid, {}, StoppedAt(0x100, true), late.data(), 2, Loop()), 2u);
}

TEST(LateFramesBeforeLoop, StoppedInTheLoopBeforeAnyRuntimeFrameWasRead) {
  const std::vector<uint64_t> late = {0x1234, 0x7000};
  // The kernel's walk stopped in the loop (its process not known yet) and
  // read no runtime frame: that frame's runtime frames are lost too.
  EXPECT_EQ(LateFramesBeforeLoop(kPid, {0x5100 | EHP_FRAME_EXACT}, StoppedAt(0x5100, true), late.data(), 2, Loop()),
            0u);
  // A return address just past the loop: its call is in it.
  EXPECT_EQ(LateFramesBeforeLoop(kPid, {0x100}, StoppedAt(0x6000, false), late.data(), 2, Loop()), 0u);
  // With a Python frame read, the frame it stopped at had its own.
  const std::vector<uint64_t> with_python = {EHP_PY_FRAME(0x9000, 4), 0x5100};
  EXPECT_EQ(LateFramesBeforeLoop(kPid, with_python, StoppedAt(0x5100, false), late.data(), 2, Loop()), 2u);
}

TEST(InterpLoops, UnusedSlotsAreNoRangeAndProcsMustBePublished) {
  const uint64_t begins[3] = {0x100, 0, 0x900}, ends[3] = {0x200, 0, 0x800};
  struct Proc {
    int state = 0;
    InterpLoops loops;
  };
  std::map<uint32_t, Proc> procs;
  procs[1].loops.Set(begins, ends, 3);
  EXPECT_TRUE(procs[1].loops.Holds(0x100));
  EXPECT_FALSE(procs[1].loops.Holds(0x200));
  EXPECT_FALSE(procs[1].loops.Holds(0));  // the 0, 0 slot
  EXPECT_FALSE(procs[1].loops.Holds(0x880));  // begin past end: no range
  procs[1].state = 1;
  EXPECT_TRUE(InLoopsOf(procs, 1, 0x150, 1));
  EXPECT_FALSE(InLoopsOf(procs, 1, 0x150, 2));  // not published (refused, say)
  EXPECT_FALSE(InLoopsOf(procs, 2, 0x150, 1));
}

}  // namespace
}  // namespace ehprof
