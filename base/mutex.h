// A std::mutex that clang's -Wthread-safety can check: libstdc++'s mutex
// and locks carry no capability annotations, so members marked
// ABSL_GUARDED_BY(mu_) of a plain std::mutex are not checked at all. The
// lock is still std::mutex underneath (not absl::Mutex: Debian's prebuilt
// abseil is not TSan-instrumented, so TSan could not see its ordering), and
// waits use std::condition_variable on it.
#ifndef EHPROF_BASE_MUTEX_H_
#define EHPROF_BASE_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <utility>

#include "absl/base/thread_annotations.h"

namespace ehprof {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
  friend class MutexLock;
  std::mutex mu_;
};

// Holds the mutex for its scope; Unlock() and Lock() release and take it
// again inside the scope (the analysis follows both). A predicate passed to
// Wait or WaitFor runs with the mutex held: annotate the lambda
// ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) when it reads guarded members.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex& mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : lock_(mu.mu_) {}
  ~MutexLock() ABSL_UNLOCK_FUNCTION() {}
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

  void Unlock() ABSL_UNLOCK_FUNCTION() { lock_.unlock(); }
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { lock_.lock(); }

  // Until done() (the mutex released while waiting, held on return).
  template <class Pred>
  void Wait(std::condition_variable& cv, Pred done) {
    cv.wait(lock_, std::move(done));
  }
  // Until done() or timeout; done()'s last value.
  template <class Rep, class Period, class Pred>
  bool WaitFor(std::condition_variable& cv, std::chrono::duration<Rep, Period> timeout, Pred done) {
    return cv.wait_for(lock_, timeout, std::move(done));
  }

 private:
  std::unique_lock<std::mutex> lock_;
};

}  // namespace ehprof

#endif  // EHPROF_BASE_MUTEX_H_
