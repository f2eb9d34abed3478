// --wall: one profile of where each thread's time went, on the CPU and off
// it, in nanoseconds.
#ifndef EHPROF_AGENT_OUTPUT_WALL_VIEW_H_
#define EHPROF_AGENT_OUTPUT_WALL_VIEW_H_

#include <cstdint>
#include <vector>

#include "agent/resolve/resolved_sample.h"

namespace ehprof {

// The leaf frame marking off-CPU time (its symbol and dso).
inline constexpr char kOffCpuFrame[] = "[off-cpu]";

// On-CPU samples weigh count x period_ns; off-CPU samples keep their
// blocked nanoseconds under an "[off-cpu]" leaf frame. With per_thread,
// each sample's comm becomes "comm-pid/tid" (as stackcollapse-perf.pl
// --tid names them), so every thread is its own tower.
void ToWallView(ResolvedSample* sample, uint64_t period_ns, bool per_thread);

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_WALL_VIEW_H_
