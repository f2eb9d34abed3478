// StackCounter, the one engine `record` (SampleList, aggregated) and the
// agent (StackAggregator) keep samples with: equal stacks once with a
// count, every part of StackKey keeping stacks apart, frames and strings
// interned once, a cap on distinct stacks, arrival order kept.
#include "agent/record/stack_counter.h"

#include <cstdint>
#include <vector>

#include "agent/continuous/interval_profile.h"
#include "agent/process/process_tracker.h"
#include "agent/tables/file_tables.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

StackKey Key(StackCounter<uint64_t>& c, std::vector<uint64_t> kernel, std::vector<uint64_t> user,
             std::vector<uint64_t> user_fp = {}) {
  StackKey k;
  k.pid = k.tid = 7;
  k.comm = c.String("app");
  k.n_kernel = static_cast<uint16_t>(kernel.size());
  k.n_user = static_cast<uint16_t>(user.size());
  for (const auto* part : {&kernel, &user, &user_fp}) {
    for (uint64_t v : *part) k.frames.push_back(c.FrameId(v));
  }
  return k;
}

TEST(StackCounter, EqualStacksOnceWithTheirCountAndWeight) {
  StackCounter<uint64_t> c;
  for (uint64_t i = 0; i < 100; ++i) EXPECT_TRUE(c.Add(Key(c, {0xffff1}, {0x401000, 0x402000}), 5, 1000 + i, i % 2));
  const Stacks<uint64_t>& s = c.stacks();
  ASSERT_EQ(s.counts.size(), 1u);
  const StackValue& v = s.counts.begin()->second;
  EXPECT_EQ(v.count, 100u);
  EXPECT_EQ(v.weight_ns, 500u);
  EXPECT_EQ(v.first_time_ns, 1000u);  // the first sample's
  EXPECT_EQ(v.first_cpu, 0u);
  EXPECT_EQ(s.frames, (std::vector<uint64_t>{0xffff1, 0x401000, 0x402000}));  // each frame once
  EXPECT_EQ(s.strings, std::vector<std::string>{"app"});
  const StackKey& k = s.counts.begin()->first;
  EXPECT_EQ(k.kernel().size(), 1u);
  EXPECT_EQ(k.user().size(), 2u);
  EXPECT_TRUE(k.user_fp().empty());
}

TEST(StackCounter, EveryPartOfTheKeyKeepsStacksApart) {
  StackCounter<uint64_t> c;
  const StackKey base = Key(c, {0xffff1}, {0x401000, 0x402000});
  std::vector<StackKey> keys(11, base);
  keys[1].tid = 8;                                   // another thread
  keys[2].pid = 9;                                   // another process
  keys[3].image = 1;                                 // after an exec
  keys[4].service = c.String("svc");                 // another service
  keys[5].comm = c.String("other");                  // another name
  keys[6].flags = EHP_SAMPLE_OFF_CPU;                // another kind: blocked time
  keys[7].stop = EHP_STOP_END_OF_STACK;              // the walk ended otherwise
  keys[8].fp_stop = 1;                               // the frame-pointer walk too
  keys[9] = Key(c, {0xffff1, 0x401000}, {0x402000});  // the same values split otherwise
  keys[10] = Key(c, {0xffff1}, {0x401000}, {0x402000});  // a frame-pointer walk's frame
  for (const StackKey& k : keys) c.Add(StackKey(k), 0, 1, 0);
  for (const StackKey& k : keys) c.Add(StackKey(k), 0, 2, 0);
  ASSERT_EQ(c.stacks().counts.size(), keys.size());
  for (const auto& [key, value] : c.stacks().counts) EXPECT_EQ(value.count, 2u);
  EXPECT_TRUE(keys[6].off_cpu());
  EXPECT_FALSE(keys[0].off_cpu());
}

TEST(StackCounter, ArrivalOrderCapAndTake) {
  StackCounter<uint64_t> c(/*max_stacks=*/3);
  for (uint64_t i = 0; i < 5; ++i) EXPECT_EQ(c.Add(Key(c, {}, {0x1000 + i}), 0, i, 0), i < 3);
  EXPECT_TRUE(c.Add(Key(c, {}, {0x1001}), 0, 9, 0));  // a known stack still counts past the cap
  Stacks<uint64_t> s = c.Take();
  EXPECT_EQ(s.dropped, 2u);
  const auto order = s.InOrder();
  ASSERT_EQ(order.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(order[i]->second.first_time_ns, i);
    EXPECT_EQ(s.frames[order[i]->first.frames[0]], 0x1000 + i);
  }
  EXPECT_EQ(order[1]->second.count, 2u);
  EXPECT_GT(s.Bytes(), 0u);
  // Empty again, ids from 0.
  EXPECT_TRUE(c.stacks().counts.empty());
  EXPECT_TRUE(c.stacks().frames.empty());
  EXPECT_EQ(c.FrameId(0x5000), 0u);
  EXPECT_EQ(c.String("x"), 0u);
}

// The agent's use: a service's stacks apart from another's, blocked time
// apart from CPU time, threads of one service together.
TEST(StackCounter, TheAgentKeysByServiceAndKindNotByThread) {
  Warnings warnings;
  FileTables files(nullptr, &warnings);
  ProcessTracker tracker(&files, nullptr, &warnings);
  StackAggregator agg;
  RawSample s;
  s.pid = 10;
  s.comm = "w";
  s.user = {0x401000 | EHP_FRAME_EXACT};
  for (uint32_t tid : {10, 11, 12}) {
    s.tid = tid;
    agg.Add(s, tracker, "a");
  }
  agg.Add(s, tracker, "b");
  s.flags = EHP_SAMPLE_OFF_CPU;
  s.off_cpu_ns = 70;
  agg.Add(s, tracker, "a");
  agg.Add(s, tracker, "a");
  const IntervalProfile p = agg.Take(100);
  ASSERT_EQ(p.counts.size(), 3u);
  for (const auto& [key, value] : p.counts) {
    const std::string& service = p.strings[key.service];
    if (key.off_cpu()) {
      EXPECT_EQ(value.count, 2u);
      EXPECT_EQ(value.weight_ns, 140u);
    } else {
      EXPECT_EQ(value.count, service == "a" ? 3u : 1u) << service;
    }
    EXPECT_EQ(key.user().size(), 1u);
  }
}

}  // namespace
}  // namespace ehprof
