// CLOCK_MONOTONIC in nanoseconds: the clock bpf_ktime_get_ns reads, so
// user space's times compare with the samples'.
#ifndef EHPROF_BASE_MONOTONIC_CLOCK_H_
#define EHPROF_BASE_MONOTONIC_CLOCK_H_

#include <time.h>

#include <cstdint>

namespace ehprof {

inline uint64_t MonotonicNs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000 + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ehprof

#endif  // EHPROF_BASE_MONOTONIC_CLOCK_H_
