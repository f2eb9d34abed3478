// The recorder's sample sink and event decoding together, without root: a
// recorded stream of BPF records (a file of events, replayed through
// RecordedEventSource and DecodeEvent) into SampleList, as `ehprof record`
// keeps samples: in order, or aggregated (equal samples once with a count,
// never across an exec), each --verify capture matched to its sample.
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "agent/process/process_tracker.h"
#include "agent/record/event_decoder.h"
#include "agent/record/event_source.h"
#include "agent/record/sample_sink.h"
#include "agent/session/file_tables.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

using Bytes = std::vector<uint8_t>;

template <typename T>
void Append(Bytes* out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof(v));
}

ehp_event Header(uint32_t kind, uint32_t pid, uint32_t cpu, uint64_t time_ns) {
  ehp_event ev{};
  ev.kind = kind;
  ev.pid = ev.tid = pid;
  ev.cpu = cpu;
  ev.time_ns = time_ns;
  std::strncpy(ev.comm, "app", sizeof(ev.comm));
  return ev;
}

Bytes Sample(uint32_t pid, uint32_t cpu, uint64_t time_ns, uint64_t leaf) {
  ehp_event ev = Header(EHP_EVENT_SAMPLE, pid, cpu, time_ns);
  ev.n_user = 2;
  Bytes out;
  Append(&out, ev);
  Append(&out, leaf);
  Append(&out, uint64_t{0x401500});
  return out;
}

Bytes Verify(uint32_t pid, uint32_t cpu, uint64_t time_ns) {
  Bytes out;
  Append(&out, Header(EHP_EVENT_VERIFY, pid, cpu, time_ns));
  ehp_verify v{};
  v.stack_len = 8;
  Append(&out, v);
  Append(&out, uint64_t{0x1122334455667788});
  return out;
}

Bytes Plain(uint32_t kind, uint32_t pid) {
  Bytes out;
  Append(&out, Header(kind, pid, 0, 0));
  return out;
}

class SampleSinkReplay : public ::testing::Test {
 protected:
  void SetUp() override { path_ = ::testing::TempDir() + "/sink_events." + std::to_string(getpid()); }
  void TearDown() override { ::unlink(path_.c_str()); }
  // The stream written to a file, replayed into `sink` as the recorder's
  // loop hands records over: samples and captures to the sink, an exec or
  // exit as a new image.
  void Replay(const std::vector<Bytes>& stream, SampleSink* sink) {
    {
      auto w = EventFileWriter::Create(path_);
      ASSERT_TRUE(w.ok()) << w.status();
      for (const Bytes& b : stream) ASSERT_TRUE(w->Write(b.data(), b.size()).ok());
    }
    auto src = RecordedEventSource::Open(path_, [&](const void* data, size_t size) {
      DecodedEvent d = DecodeEvent(data, size);
      switch (d.kind) {
        case DecodedEvent::Kind::kSample:
          sink->Add(std::move(d.sample), tracker_);
          break;
        case DecodedEvent::Kind::kVerify:
          sink->AddCapture(d.header, std::move(d.verify));
          break;
        case DecodedEvent::Kind::kExec:
        case DecodedEvent::Kind::kExit:
          sink->NewImage(d.header.pid);
          break;
        default:
          break;
      }
    });
    ASSERT_TRUE(src.ok()) << src.status();
    while ((*src)->Poll(0) > 0) {
    }
    EXPECT_TRUE((*src)->status().ok()) << (*src)->status();
  }
  std::string path_;
  FileTables files_{nullptr};
  ProcessTracker tracker_{&files_, nullptr};
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
