// A JVM's code heaps (CodeCache::_heaps) as the BPF walk needs them: each
// heap's reserved code range and segment map, their hull and their
// segment size, into ehp_jvm_proc. Reserved, not committed: a heap commits
// more as the JIT fills it, and a committed top read even a second ago
// leaves out the code placed since and every walk through it. A pc past
// the committed part finds its segment-map byte free (0xff) or
// unreadable, never a block.
#ifndef EHPROF_AGENT_JVM_CODE_HEAPS_H_
#define EHPROF_AGENT_JVM_CODE_HEAPS_H_

#include "absl/status/statusor.h"
#include "agent/jvm/jvm_layout.h"
#include "agent/process/process_memory.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

// Fills p's heaps, nheaps, code_lo, code_hi and log2_segment. false: the
// code cache is not set up yet (no heap: a JVM still starting); an error
// when it is unreadable or not what a code cache is (more heaps than
// EHP_JVM_HEAPS, heaps of different segment sizes, empty or huge ranges).
absl::StatusOr<bool> ReadCodeHeaps(const ProcessMemory& mem, const CodeHeapFields& f, ehp_jvm_proc* p);

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_CODE_HEAPS_H_
