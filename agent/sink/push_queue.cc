#include "agent/sink/push_queue.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "base/guarded.h"

namespace ehprof {

PushQueue::PushQueue(Send send, Report report, Options options)
    : send_(std::move(send)), report_(std::move(report)), options_(options) {
  thread_ = std::thread([this] { Run(); });
}

PushQueue::~PushQueue() {
  {
    MutexLock lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PushQueue::Enqueue(std::string body) {
  auto item = std::make_shared<const std::string>(std::move(body));
  {
    MutexLock lock(mu_);
    // The one in flight stays; the oldest waiting ones make room.
    const size_t victim = sending_ ? 1 : 0;
    while (victim < queue_.size() && (queue_.size() >= options_.max_queued ||
                                      queued_bytes_ + item->size() > options_.max_bytes)) {
      queued_bytes_ -= queue_[victim]->size();
      queue_.erase(queue_.begin() + static_cast<std::ptrdiff_t>(victim));
      ++counters_.dropped;
    }
    queued_bytes_ += item->size();
    queue_.push_back(std::move(item));
  }
  cv_.notify_all();
}

size_t PushQueue::Flush(std::chrono::milliseconds timeout) {
  MutexLock lock(mu_);
  lock.WaitFor(cv_, timeout, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return queue_.empty(); });
  return queue_.size();
}

PushQueue::Counters PushQueue::counters() const {
  MutexLock lock(mu_);
  Counters c = counters_;
  c.queued = queue_.size();
  c.queued_bytes = queued_bytes_;
  return c;
}

void PushQueue::Said(const absl::Status& s) {
  ++failures_since_ok_;
  if (said_.insert(s.code()).second && report_) {
    report_(absl::StrCat("push failed (", absl::StatusCodeToString(s.code()), "): ", s.message(),
                         absl::IsUnavailable(s) ? "; retrying with backoff" : ""));
  }
}

void PushQueue::Run() {
  auto backoff = options_.min_backoff;
  MutexLock lock(mu_);
  for (;;) {
    lock.Wait(cv_, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_ || !queue_.empty(); });
    if (stop_) return;
    sending_ = true;
    // Held here too: Enqueue may drop others meanwhile, never this one.
    const std::shared_ptr<const std::string> body = queue_.front();
    lock.Unlock();
    // An exception in sending is that push refused (not retried), not
    // the end of pushing.
    absl::Status st = Guarded("the push thread", "that push is dropped", [&] { return send_(*body); });
    lock.Lock();
    sending_ = false;
    const bool give_up = !st.ok() && absl::IsUnavailable(st) && ++attempts_ >= options_.max_attempts;
    if (st.ok() || !absl::IsUnavailable(st) || give_up) {
      if (!queue_.empty()) {
        queued_bytes_ -= queue_.front()->size();
        queue_.pop_front();
      }
      if (st.ok()) {
        ++counters_.pushed;
      } else if (give_up) {
        ++counters_.abandoned;
      } else {
        ++counters_.rejected;
      }
      attempts_ = 0;
      cv_.notify_all();
    }
    if (give_up && report_) {
      lock.Unlock();
      report_(absl::StrCat("push given up after ", options_.max_attempts, " attempts: ", st.message()));
      lock.Lock();
    }
    if (st.ok()) {
      backoff = options_.min_backoff;
      if (failures_since_ok_ > 0 && report_) {
        lock.Unlock();
        report_(absl::StrCat("push recovered after ", failures_since_ok_, " failed attempts"));
        lock.Lock();
      }
      failures_since_ok_ = 0;
      said_.clear();
      continue;
    }
    ++counters_.attempts_failed;
    lock.Unlock();
    Said(st);
    lock.Lock();
    if (!absl::IsUnavailable(st)) continue;
    // Retry the same request after the backoff (or sooner when stopping).
    lock.WaitFor(cv_, backoff, [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stop_; });
    backoff = std::min(backoff * 2, options_.max_backoff);
  }
}

}  // namespace ehprof
