// The per-sample text form: a header line per sample, then its kernel and
// user frames with symbol offsets and source positions.
//
//   [12.345678] fio: fio (pid=4242, tid=4243) @ CPU 1
//   Kernel:
//     0xffffffff81f3a0c1: do_syscall_64 @ 0xffffffff81f3a000+0xc1
//   Userspace:
//     0x51383: get_io_u @ 0x51100+0x283 io_u.c:812
#ifndef EHPROF_AGENT_OUTPUT_OUTPUT_TEXT_H_
#define EHPROF_AGENT_OUTPUT_OUTPUT_TEXT_H_

#include <ostream>
#include <vector>

#include "absl/status/status.h"
#include "agent/output/interned_profile.h"
#include "agent/resolve/resolved_sample.h"

namespace ehprof {

// Timestamps are seconds since the first sample. Per event, in order (a
// profile without events: per sample, at time 0).
absl::Status WriteText(const InternedProfile& profile, std::ostream& out);
// The same of resolved samples (through the model).
absl::Status WriteText(const std::vector<ResolvedSample>& samples, std::ostream& out);

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_OUTPUT_TEXT_H_
