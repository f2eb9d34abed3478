// Where `ehprof agent`'s resident memory goes, and the process-wide
// choices that keep it small: how malloc is configured (few arenas,
// large blocks mmap'd so that freeing them returns them), and how large
// the ring buffer is (its data pages are mapped twice in user space, so
// they count twice in RSS).
#ifndef EHPROF_AGENT_CONTINUOUS_AGENT_MEMORY_H_
#define EHPROF_AGENT_CONTINUOUS_AGENT_MEMORY_H_

#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace ehprof {

// glibc malloc for a long-running agent: at most two arenas (each thread
// would otherwise get its own, each keeping what its thread freed), blocks
// of 256 KiB and more mmap'd (returned to the system when freed), free
// memory above 1 MiB at the top of the heap given back. Call first thing.
void ConfigureAgentMalloc();
// Gives freed heap memory back to the system (malloc_trim): after an
// interval, after a file's symbol data is evicted.
void ReturnFreedMemory();

// The ring buffer the agent needs: at least 0.5 s of samples at `hz` on
// `cpus` CPUs (2 KiB a sample, a deep user stack and a kernel one), a
// power of two between 2 and 16 MiB; --off-cpu (bursts of switches) keeps
// the 16 MiB default.
uint32_t AgentRingBytes(unsigned cpus, uint64_t hz, bool off_cpu);

// The process's resident memory by kind, from /proc/self/smaps and
// mallinfo2.
struct MemoryBreakdown {
  uint64_t rss = 0;
  uint64_t ring_buffer = 0;   // BPF maps mapped here (the ring buffer, twice)
  uint64_t files = 0;         // file-backed pages: ehprof's and its libraries' code
  uint64_t heap_in_use = 0;   // malloc'd and not freed (every arena, mmap'd blocks)
  // The rest of anonymous memory: freed heap still resident in the
  // arenas, thread stacks.
  uint64_t heap_free = 0;
};
MemoryBreakdown ReadMemoryBreakdown();
// The same from smaps text and malloc's in-use figure (tests).
MemoryBreakdown ParseMemoryBreakdown(absl::string_view smaps, uint64_t heap_in_use);

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_AGENT_MEMORY_H_
