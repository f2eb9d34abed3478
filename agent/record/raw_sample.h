// One sample as the BPF program reported it (runtime addresses), and the
// --verify capture of its registers and stack. The recorder produces these;
// the resolver and the verifier read them without depending on the recorder.
#ifndef EHPROF_AGENT_RECORD_RAW_SAMPLE_H_
#define EHPROF_AGENT_RECORD_RAW_SAMPLE_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "bpf/ehprof_abi.h"

namespace ehprof {

struct RawSample {
  uint32_t pid = 0, tid = 0, cpu = 0;
  uint64_t time_ns = 0;
  std::string comm;
  uint8_t stop_reason = 0, fp_stop_reason = 0;
  uint32_t flags = 0;
  uint32_t bpf_ns = 0;      // the BPF program's own time for this sample
  std::vector<uint64_t> kernel, user, user_fp;  // user frames carry EHP_FRAME_* bits
  uint64_t count = 1;       // > 1: equal samples aggregated (time_ns is the first's)
  // EHP_SAMPLE_OFF_CPU in flags: the nanoseconds blocked (summed over count
  // blocks when aggregated); 0 for timer samples.
  uint64_t off_cpu_ns = 0;
};

// --verify: the registers and stack copy of one sample.
struct VerifyCapture {
  size_t sample = 0;  // index into samples()
  uint64_t regs[EHP_REG_RIP + 1] = {};
  bool exact = true;  // the leaf pc was interrupted, not a syscall's return
  std::vector<uint8_t> stack;
};

// A walk stopped for want of a table or a process entry: where it stopped
// and the stack from there (bpf/deferred.bpf.h), sent just before its
// sample on the same CPU, to finish later (agent/deferred/).
struct DeferredCapture {
  ehp_deferred state{};  // its stack_len is stack.size()
  std::vector<uint8_t> stack;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_RAW_SAMPLE_H_
