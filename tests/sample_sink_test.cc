// The recorder's sample sink and event decoding together, without root: a
// recorded stream of BPF records (a file of events, replayed through
// RecordedEventSource and DecodeEvent) into SampleList, as `ehprof record`
// keeps samples (through the recorder's EventHandler): in order, or aggregated (equal samples once with a count,
// never across an exec), each --verify capture matched to its sample.
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "agent/process/process_tracker.h"
#include "agent/record/event_handler.h"
#include "agent/record/recorded_events.h"
#include "agent/record/sample_sink.h"
#include "agent/tables/file_tables.h"
#include "gtest/gtest.h"
#include "tests/event_records.h"

namespace ehprof {
namespace {

using namespace ehprof::testing;  // NOLINT: the record builders

class SampleSinkReplay : public ::testing::Test {
 protected:
  void SetUp() override { path_ = ::testing::TempDir() + "/sink_events." + std::to_string(getpid()); }
  void TearDown() override { ::unlink(path_.c_str()); }
  // The stream written to a file, replayed into `sink` as the recorder's
  // loop hands records over: samples and captures to the sink, an exec or
  // exit as a new image.
  void Replay(const std::vector<Bytes>& stream, SampleSink* sink) {
    WriteEvents(path_, stream);
    EventHandler handler(&tracker_, sink, {}, &warnings_, {});
    auto src = RecordedEventSource::Open(path_, [&](const void* data, size_t size) { handler.Handle(data, size); });
    ASSERT_TRUE(src.ok()) << src.status();
    while ((*src)->Poll(0) > 0) {
    }
    EXPECT_TRUE((*src)->status().ok()) << (*src)->status();
  }
  std::string path_;
  Warnings warnings_;
  FileTables files_{nullptr, &warnings_};
  ProcessTracker tracker_{&files_, nullptr, &warnings_};
};

const std::vector<Bytes> kStream = {
    Sample(10, 0, 100, 0x401000), Verify(10, 0, 100),  // captured
    Sample(10, 1, 101, 0x401000),                       // equal to the first
    Sample(11, 0, 102, 0x402000), Verify(10, 0, 100),  // its sample is not the last on CPU 0
    Plain(EHP_EVENT_EXEC, 10),
    Sample(10, 0, 103, 0x401000),  // equal, but another image
    Verify(10, 0, 103),
};

TEST_F(SampleSinkReplay, KeepsEverySampleInOrderWithItsCaptures) {
  SampleList list(/*aggregate=*/false);
  Replay(kStream, &list);
  ASSERT_EQ(list.samples().size(), 4u);
  EXPECT_EQ(list.samples()[1].time_ns, 101u);
  EXPECT_EQ(list.samples()[2].pid, 11u);
  ASSERT_EQ(list.captures().size(), 2u);
  EXPECT_EQ(list.captures()[0].sample, 0u);
  EXPECT_EQ(list.captures()[1].sample, 3u);
  EXPECT_EQ(list.captures()[1].stack.size(), 8u);
  EXPECT_TRUE(list.ResolvesLater());
}

std::vector<RawSample> All(const SampleList& list) {
  std::vector<RawSample> out;
  list.ForEach([&](const RawSample& s) { out.push_back(s); });
  return out;
}

TEST_F(SampleSinkReplay, AggregatesEqualSamplesButNeverAcrossAnExec) {
  SampleList list(/*aggregate=*/true);
  Replay(kStream, &list);
  EXPECT_TRUE(list.samples().empty());  // kept as distinct stacks only
  EXPECT_FALSE(list.empty());
  const std::vector<RawSample> all = All(list);
  ASSERT_EQ(all.size(), 3u);  // in the order they first came
  EXPECT_EQ(all[0].count, 2u);  // 100 and 101 (another CPU, same thread and stacks)
  EXPECT_EQ(all[0].time_ns, 100u);  // the first's time and CPU
  EXPECT_EQ(all[0].cpu, 0u);
  EXPECT_EQ(all[0].comm, "app");
  EXPECT_EQ(all[0].user, (std::vector<uint64_t>{0x401000, 0x401500}));
  EXPECT_EQ(all[1].count, 1u);
  EXPECT_EQ(all[1].pid, 11u);
  EXPECT_EQ(all[2].count, 1u);  // after the exec
  EXPECT_EQ(all[2].time_ns, 103u);
  EXPECT_EQ(list.stacks().frames.size(), 3u);  // 0x401000, 0x401500, 0x402000: each once
}

TEST_F(SampleSinkReplay, InOrderForEachIsEverySample) {
  SampleList list(/*aggregate=*/false);
  Replay(kStream, &list);
  const std::vector<RawSample> all = All(list);
  ASSERT_EQ(all.size(), 4u);
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].time_ns, list.samples()[i].time_ns);
  EXPECT_TRUE(SampleList(true).empty());
}

// A sink of its own (as the agent's): every sample handed over once.
TEST_F(SampleSinkReplay, AnotherSinkGetsEverySampleAndNoCaptures) {
  struct Counting : SampleSink {
    void Add(RawSample&& s, const ProcessTracker&) override { pids.push_back(s.pid); }
    std::vector<uint32_t> pids;
  } counting;
  Replay(kStream, &counting);
  EXPECT_EQ(counting.pids, (std::vector<uint32_t>{10, 10, 11, 10}));
  EXPECT_FALSE(counting.ResolvesLater());
}

}  // namespace
}  // namespace ehprof
