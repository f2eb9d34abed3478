// Delivery of profiles to a server that may be down, slow or refusing:
// Enqueue never blocks the caller (the sampling side); a sender thread
// pushes in order, retries what may succeed later (unavailable, 5xx, 429)
// with exponential backoff, gives up on what cannot (4xx), and when the
// queue is full (by count or by bytes) drops the oldest, counting it. Each kind of failure is
// reported once, with the server's answer, until a push succeeds again
// (reported once too).
#ifndef EHPROF_AGENT_SINK_PUSH_QUEUE_H_
#define EHPROF_AGENT_SINK_PUSH_QUEUE_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <thread>

#include "absl/status/status.h"
#include "base/mutex.h"

namespace ehprof {

class PushQueue {
 public:
  using Send = std::function<absl::Status(const std::string& body)>;
  using Report = std::function<void(const std::string& line)>;
  struct Options {
    size_t max_queued = 60;  // 10 minutes of 10 s intervals
    // Bytes held, the request in flight included: a few intervals of a
    // huge host must not hold gigabytes while the server is down. A request
    // bigger than this alone is still sent, with nothing else waiting.
    size_t max_bytes = size_t{64} << 20;
    std::chrono::milliseconds min_backoff{500};
    std::chrono::milliseconds max_backoff{30000};
    // A request still failing after this many attempts is given up (a
    // server that answers 500 to one malformed request would otherwise hold
    // every later one behind it); about 3 minutes with the backoffs above.
    int max_attempts = 12;
  };
  struct Counters {
    uint64_t pushed = 0;
    uint64_t attempts_failed = 0;
    uint64_t rejected = 0;  // refused for good (4xx)
    uint64_t dropped = 0;   // oldest dropped from a full queue
    uint64_t abandoned = 0; // given up after max_attempts
    size_t queued = 0;      // waiting, including one being sent
    size_t queued_bytes = 0;  // their bodies' bytes
  };

  PushQueue(Send send, Report report, Options options);
  ~PushQueue();  // stops at once; Flush first to deliver
  PushQueue(const PushQueue&) = delete;
  PushQueue& operator=(const PushQueue&) = delete;

  void Enqueue(std::string body);
  // Waits until everything queued was sent or refused, or timeout; returns
  // how many are left.
  size_t Flush(std::chrono::milliseconds timeout);
  Counters counters() const;

 private:
  void Run();
  void Said(const absl::Status& s);

  Send send_;
  Report report_;
  Options options_;
  mutable Mutex mu_;
  std::condition_variable cv_;
  // Shared with the sender while in flight: a body is held once.
  std::deque<std::shared_ptr<const std::string>> queue_ ABSL_GUARDED_BY(mu_);
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  bool sending_ ABSL_GUARDED_BY(mu_) = false;  // front() is in flight
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  Counters counters_ ABSL_GUARDED_BY(mu_);
  std::set<absl::StatusCode> said_;  // sender thread only
  uint64_t failures_since_ok_ = 0;   // sender thread only
  int attempts_ = 0;                 // of the request at the front, sender thread only
  std::thread thread_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_SINK_PUSH_QUEUE_H_
