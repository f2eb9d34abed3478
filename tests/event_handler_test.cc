// The recorder's handling of events without root or BPF: a stream of BPF
// records written to a file of events, replayed through RecordedEventSource
// into EventHandler (the code Recorder runs on the ring buffer's records)
// with an in-memory process tracker: samples through the recorder's hooks
// to the sink, execs into the tracker, the re-reads execs, forks and
// unknown pcs ask for (those at most every 50 ms a process), exits (an image no sample came from forgotten), and processes gone
// without an EXIT event found by the sweep.
#include "agent/record/event_handler.h"

#include <unistd.h>

#include <string>
#include <vector>

#include "agent/process/process_tracker.h"
#include "agent/record/recorded_events.h"
#include "agent/record/sample_sink.h"
#include "agent/tables/file_tables.h"
#include "gtest/gtest.h"
#include "tests/event_records.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using namespace ehprof::testing;  // NOLINT: the record builders

// No such processes: reading their maps finds nothing, opens nothing.
constexpr uint32_t kA = 4190011, kB = 4190012, kChild = 4190013;
constexpr uint64_t kMs = 1000000;

class EventHandlerReplay : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = ::testing::TempDir() + "/handler_events." + std::to_string(getpid());
    tracker_.Apply(kA, {TextMapping(0x400000, 0x500000, "/bin/a")}, 1);
    tracker_.Apply(kB, {TextMapping(0x400000, 0x500000, "/bin/b")}, 1);
  }
  void TearDown() override { ::unlink(path_.c_str()); }
  void Replay(const std::vector<Bytes>& stream, EventHandler& handler) {
    WriteEvents(path_, stream);
    auto src = RecordedEventSource::Open(path_, [&](const void* data, size_t size) { handler.Handle(data, size); });
    ASSERT_TRUE(src.ok()) << src.status();
    (*src)->Drain();
    EXPECT_TRUE((*src)->status().ok()) << (*src)->status();
  }
  EventHandler::Hooks Hooks() {
    EventHandler::Hooks h;
    h.accept = [](const RawSample& s) { return s.time_ns >= 100; };  // as -D
    h.count = [this](const RawSample& s, size_t size) {
      counted_.push_back(s.time_ns);
      bytes_ += size;
    };
    h.exec = [this](uint32_t pid) { execs_.push_back(pid); };
    h.exited = [this](uint32_t pid) { exited_.push_back(pid); };
    return h;
  }
  std::string path_;
  Warnings warnings_;
  FileTables files_{nullptr, &warnings_};
  ProcessTracker tracker_{&files_, nullptr, &warnings_};
  SampleList list_{/*aggregate=*/false};
  std::vector<uint64_t> counted_;
  size_t bytes_ = 0;
  std::vector<uint32_t> execs_, exited_;
};

TEST_F(EventHandlerReplay, SamplesGoThroughTheHooksToTheSink) {
  EventHandler h(&tracker_, &list_, {}, &warnings_, Hooks());
  Replay({Sample(kA, 0, 50, 0x401000),  // before -D: left out
          Sample(kA, 0, 100, 0x401000), Verify(kA, 0, 100), Sample(kB, 1, 101, 0x402000)},
         h);
  EXPECT_EQ(counted_, (std::vector<uint64_t>{100, 101}));
  EXPECT_EQ(bytes_, 2 * Sample(kA, 0, 0, 0).size());
  ASSERT_EQ(list_.samples().size(), 2u);
  EXPECT_EQ(list_.samples()[0].user, (std::vector<uint64_t>{0x401000, 0x401500}));
  ASSERT_EQ(list_.captures().size(), 1u);  // the capture found its sample
  EXPECT_EQ(list_.captures()[0].sample, 0u);
  EXPECT_TRUE(h.to_refresh().empty());
}

TEST_F(EventHandlerReplay, AnExecEndsTheImageAndAsksForReReadsWhileLdSoMaps) {
  EventHandler h(&tracker_, &list_, {}, &warnings_, Hooks());
  Replay({Sample(kA, 0, 100, 0x401000), Plain(EHP_EVENT_EXEC, kA, 200 * kMs), Sample(kA, 0, 300 * kMs, 0x401000)}, h);
  EXPECT_EQ(execs_, std::vector<uint32_t>{kA});
  EXPECT_EQ(h.to_refresh().count(kA), 1u);
  EXPECT_EQ(h.next_followup_ns(), 205 * kMs);  // 5, 20, 60 and 200 ms after
  // The sample before the exec resolves in the old image; after it the
  // maps are unknown until read again.
  EXPECT_TRUE(tracker_.Resolve(kA, 100, 0x401000));
  EXPECT_FALSE(tracker_.Resolve(kA, 300 * kMs, 0x401000));
  h.ProcessPending(210 * kMs);
  EXPECT_TRUE(h.to_refresh().empty());
  EXPECT_EQ(h.next_followup_ns(), 220 * kMs);
  h.ProcessPending(400 * kMs);
  EXPECT_EQ(h.next_followup_ns(), UINT64_MAX);
  EXPECT_TRUE(warnings_.Take().empty());  // a process gone is no warning
}

TEST_F(EventHandlerReplay, AForkedChildIsReadAgain) {
  EventHandler h(&tracker_, &list_, {}, &warnings_, Hooks());
  Replay({Plain(EHP_EVENT_FORK, kA, 10, kChild)}, h);
  EXPECT_EQ(h.to_refresh(), std::set<uint32_t>{kChild});
  // Without the kernel's index the child's image is known only from its
  // maps (record_kernel_maps_priv_test: with it, a copy of its parent's).
  EXPECT_FALSE(tracker_.Resolve(kChild, 20, 0x401000));
}

TEST_F(EventHandlerReplay, UnknownPcsAndPidsAskForAReReadOnlyWhenItCanHelp) {
  EventHandler h(&tracker_, &list_, {}, &warnings_, Hooks());
  Replay({Plain(EHP_EVENT_UNKNOWN_PC, kA, 10, 0x401000),  // known: reading again would not help
          Plain(EHP_EVENT_UNKNOWN_PC, kB, 10, 0x900000), Plain(EHP_EVENT_UNKNOWN_PID, kChild, 10)},
         h);
  EXPECT_EQ(h.to_refresh(), (std::set<uint32_t>{kB, kChild}));
}

TEST_F(EventHandlerReplay, UnknownPcsOfOneProcessAskForAReadEvery50MsAtMost) {
  EventHandler h(&tracker_, &list_, {}, &warnings_, Hooks());
  // A stack that leads to garbage: the kernel's event every 2 ms.
  std::vector<Bytes> stream;
  for (uint64_t t = 10 * kMs; t < 60 * kMs; t += 2 * kMs) {
    stream.push_back(Plain(EHP_EVENT_UNKNOWN_PC, kB, t, 0x900000));
  }
  Replay(stream, h);
  // The first is read at once; the rest wait for one read 50 ms later.
  EXPECT_EQ(h.to_refresh(), std::set<uint32_t>{kB});
  EXPECT_EQ(h.next_followup_ns(), 60 * kMs);
  h.ProcessPending(20 * kMs);
  EXPECT_TRUE(h.to_refresh().empty());
  h.ProcessPending(60 * kMs);
  EXPECT_EQ(h.next_followup_ns(), UINT64_MAX);
  // One after that read waits for 50 ms after it; one then is read at once.
  Replay({Plain(EHP_EVENT_UNKNOWN_PC, kB, 100 * kMs, 0x900000)}, h);
  EXPECT_TRUE(h.to_refresh().empty());
  EXPECT_EQ(h.next_followup_ns(), 110 * kMs);
  h.ProcessPending(110 * kMs);
  Replay({Plain(EHP_EVENT_UNKNOWN_PC, kB, 161 * kMs, 0x900000)}, h);
  EXPECT_EQ(h.to_refresh(), std::set<uint32_t>{kB});
  EXPECT_EQ(h.next_followup_ns(), UINT64_MAX);
  // Another process's are its own.
  Replay({Plain(EHP_EVENT_UNKNOWN_PC, kChild, 162 * kMs, 0x900000)}, h);
  EXPECT_EQ(h.to_refresh(), (std::set<uint32_t>{kB, kChild}));
}

// A process mapping code of a file user space has not met is read at once,
// while the file is mapped (a plugin loaded and closed in a millisecond);
// one mapping unknown files for ever, 20 times a second at most.
TEST_F(EventHandlerReplay, NewFilesAskForAReadAtOnceTwentyTimesASecondAtMost) {
  EventHandler h(&tracker_, &list_, {}, &warnings_, Hooks());
  Replay({Plain(EHP_EVENT_NEW_FILE, kB, 10 * kMs, 0x7f0000000000)}, h);
  EXPECT_EQ(h.to_refresh(), std::set<uint32_t>{kB});
  EXPECT_EQ(h.next_followup_ns(), UINT64_MAX) << "read now, not later";
  h.ProcessPending(11 * kMs);
  // The kernel's event every 2 ms, for 200 ms: 19 more reads, then none.
  size_t reads = 0;
  for (uint64_t t = 12 * kMs; t < 212 * kMs; t += 2 * kMs) {
    Replay({Plain(EHP_EVENT_NEW_FILE, kB, t, 0x7f0000000000)}, h);
    reads += h.to_refresh().count(kB);
    h.ProcessPending(t + 1);
  }
  EXPECT_EQ(reads, 19u);
  // The next second's window reads again; another process has its own.
  Replay({Plain(EHP_EVENT_NEW_FILE, kB, 1011 * kMs, 0x7f0000000000),
          Plain(EHP_EVENT_NEW_FILE, kChild, 1011 * kMs, 0x7f0000000000)},
         h);
  EXPECT_EQ(h.to_refresh(), (std::set<uint32_t>{kB, kChild}));
}

TEST_F(EventHandlerReplay, ExitsForgetImagesNoSampleCameFromAndTheSweepFindsTheRest) {
  EventHandler h(&tracker_, &list_, {}, &warnings_, Hooks());
  Replay({Sample(kA, 0, 100, 0x401000), Plain(EHP_EVENT_EXIT, kA, 150), Plain(EHP_EVENT_EXIT, kB, 160)}, h);
  EXPECT_EQ(h.to_exit().size(), 2u);
  h.ProcessPending(200);  // the first call sweeps too: nothing else is live
  EXPECT_EQ(exited_, (std::vector<uint32_t>{kA, kB}));
  EXPECT_TRUE(h.to_exit().empty());
  EXPECT_EQ(tracker_.history_size(), 1u);  // kA's, for its sample
  EXPECT_TRUE(tracker_.Resolve(kA, 100, 0x401000));
  EXPECT_TRUE(tracker_.live_pids().empty());

  // A process gone without an EXIT event (a full ring buffer lost it).
  tracker_.Apply(kChild, {TextMapping(0x400000, 0x500000, "/bin/c")}, 300);
  h.ProcessPending(500);  // within a second of the last sweep: still there
  EXPECT_EQ(tracker_.live_pids(), std::vector<uint32_t>{kChild});
  h.ProcessPending(2000000000);
  EXPECT_TRUE(tracker_.live_pids().empty());
  EXPECT_EQ(exited_.back(), kChild);
}

}  // namespace
}  // namespace ehprof
