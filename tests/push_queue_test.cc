// PushQueue with a scripted sender (the real server is pyroscope_priv_test's):
// order, retries with backoff for what may succeed later, no retry for what
// cannot, giving up on a request that keeps failing, dropping the oldest
// when full (by count or bytes), and each kind of failure said once.
#include "agent/sink/push_queue.h"

#include <chrono>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace std::chrono_literals;

// Answers from a script (OK once it runs out); records what it was sent.
struct ScriptedServer {
  std::mutex mu;
  std::deque<absl::Status> answers;
  std::vector<std::string> received;  // bodies accepted
  std::vector<std::string> reports;
  absl::Status Send(const std::string& body) {
    std::lock_guard<std::mutex> lock(mu);
    absl::Status st = absl::OkStatus();
    if (!answers.empty()) {
      st = answers.front();
      answers.pop_front();
    }
    if (st.ok()) received.push_back(body);
    return st;
  }
  PushQueue Queue(PushQueue::Options o = Fast()) {
    return PushQueue([this](const std::string& b) { return Send(b); },
                     [this](const std::string& l) {
                       std::lock_guard<std::mutex> lock(mu);
                       reports.push_back(l);
                     },
                     o);
  }
  static PushQueue::Options Fast() {
    PushQueue::Options o;
    o.min_backoff = 1ms;
    o.max_backoff = 4ms;
    return o;
  }
};

TEST(PushQueue, RetriesWhatMaySucceedInOrderAndSaysFailureAndRecoveryOnce) {
  ScriptedServer server;
  for (int i = 0; i < 3; ++i) server.answers.push_back(absl::UnavailableError("connection refused"));
  PushQueue q = server.Queue();
  q.Enqueue("a");
  q.Enqueue("b");
  EXPECT_EQ(q.Flush(5s), 0u);
  EXPECT_THAT(server.received, ElementsAre("a", "b"));
  const PushQueue::Counters c = q.counters();
  EXPECT_EQ(c.pushed, 2u);
  EXPECT_EQ(c.attempts_failed, 3u);
  ASSERT_EQ(server.reports.size(), 2u);
  EXPECT_THAT(server.reports[0], HasSubstr("connection refused"));
  EXPECT_THAT(server.reports[1], HasSubstr("recovered after 3"));
}

TEST(PushQueue, ARefusedRequestIsNotRetried) {
  ScriptedServer server;
  server.answers.push_back(absl::InvalidArgumentError("HTTP 400: bad label"));
  PushQueue q = server.Queue();
  q.Enqueue("bad");
  q.Enqueue("good");
  EXPECT_EQ(q.Flush(5s), 0u);
  EXPECT_THAT(server.received, ElementsAre("good"));
  EXPECT_EQ(q.counters().rejected, 1u);
  EXPECT_THAT(server.reports[0], HasSubstr("HTTP 400: bad label"));
}

// An exception from the sender (base/guarded.h) is that push refused, not
// the end of the push thread (std::terminate, before).
TEST(PushQueue, AnExceptionInSendingDropsThatPushOnly) {
  ScriptedServer server;
  bool thrown = false;
  PushQueue q(
      [&](const std::string& b) {
        if (!std::exchange(thrown, true)) throw std::out_of_range("stoi");
        return server.Send(b);
      },
      nullptr, ScriptedServer::Fast());
  ::testing::internal::CaptureStderr();
  q.Enqueue("throws");
  q.Enqueue("next");
  EXPECT_EQ(q.Flush(5s), 0u);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("internal error in the push thread: stoi"));
  EXPECT_THAT(server.received, ElementsAre("next"));
  EXPECT_EQ(q.counters().rejected, 1u);
}

TEST(PushQueue, ARequestThatKeepsFailingIsGivenUpAndTheRestGoOn) {
  ScriptedServer server;
  PushQueue::Options o = ScriptedServer::Fast();
  o.max_attempts = 4;
  for (int i = 0; i < 4; ++i) server.answers.push_back(absl::UnavailableError("HTTP 500: cannot parse"));
  PushQueue q = server.Queue(o);
  q.Enqueue("poison");
  q.Enqueue("next");
  EXPECT_EQ(q.Flush(5s), 0u);
  EXPECT_THAT(server.received, ElementsAre("next"));
  EXPECT_EQ(q.counters().abandoned, 1u);
  bool said = false;
  for (const std::string& r : server.reports) said |= r.find("given up after 4 attempts") != std::string::npos;
  EXPECT_TRUE(said);
}

TEST(PushQueue, AFullQueueDropsTheOldestAndNeverBlocks) {
  ScriptedServer server;
  PushQueue::Options o = ScriptedServer::Fast();
  o.max_queued = 3;
  o.min_backoff = o.max_backoff = 200ms;
  server.answers.push_back(absl::UnavailableError("down"));
  PushQueue q = server.Queue(o);
  q.Enqueue("1");
  // Its first attempt failed: it waits out the backoff.
  for (int i = 0; i < 1000 && q.counters().attempts_failed == 0; ++i) std::this_thread::sleep_for(1ms);
  const auto start = std::chrono::steady_clock::now();
  for (const char* b : {"2", "3", "4", "5"}) q.Enqueue(b);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 100ms);  // no waiting on the sender
  EXPECT_EQ(q.Flush(5s), 0u);
  // The two oldest made room.
  EXPECT_THAT(server.received, ElementsAre("3", "4", "5"));
  EXPECT_EQ(q.counters().dropped, 2u);
}

// Bounded by bytes as well as by count: big intervals while the server is
// down hold at most max_bytes; one bigger than that alone is still sent.
TEST(PushQueue, BytesBoundTheQueueOldestDroppedFirst) {
  ScriptedServer server;
  PushQueue::Options o = ScriptedServer::Fast();
  o.max_queued = 100;
  o.max_bytes = 10;
  o.min_backoff = o.max_backoff = 1s;  // the sender waits while the test enqueues
  server.answers.push_back(absl::UnavailableError("down"));
  PushQueue q = server.Queue(o);
  q.Enqueue("aaaa");
  for (int i = 0; i < 1000 && q.counters().attempts_failed == 0; ++i) std::this_thread::sleep_for(1ms);
  q.Enqueue("bbbb");
  EXPECT_EQ(q.counters().queued_bytes, 8u);
  q.Enqueue("cccc");  // 12 > 10: the oldest goes
  EXPECT_EQ(q.counters().queued_bytes, 8u);
  EXPECT_EQ(q.counters().dropped, 1u);
  q.Enqueue("dddddddddddd");  // bigger than the bound: everything else goes
  EXPECT_EQ(q.counters().queued_bytes, 12u);
  EXPECT_EQ(q.Flush(5s), 0u);
  EXPECT_THAT(server.received, ElementsAre("dddddddddddd"));
  EXPECT_EQ(q.counters().dropped, 3u);
  EXPECT_EQ(q.counters().queued_bytes, 0u);
}

}  // namespace
}  // namespace ehprof
