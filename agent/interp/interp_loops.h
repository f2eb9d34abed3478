// Where an interpreter's loop runs in one process: the [begin, end) code
// ranges a tracker published to its BPF walk as the places the runtime's
// own frames belong (Python's eval loop, Ruby's vm_exec_core, PHP's
// execute_ex and its parts, Perl's runops). A walk finished late
// (agent/deferred) reads no runtime memory: where it meets such a range,
// the runtime's frames it would have had there are lost, and the stack is
// cut there with EHP_STOP_LATE_RUNTIME rather than shown without them.
#ifndef EHPROF_AGENT_INTERP_INTERP_LOOPS_H_
#define EHPROF_AGENT_INTERP_INTERP_LOOPS_H_

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace ehprof {

class InterpLoops {
 public:
  // The ranges published (empty ones, 0 0 where a slot is unused, skipped).
  void Set(const uint64_t* begins, const uint64_t* ends, size_t n) {
    ranges_.clear();
    for (size_t i = 0; i < n; ++i) {
      if (begins[i] < ends[i]) ranges_.emplace_back(begins[i], ends[i]);
    }
  }
  bool Holds(uint64_t pc) const {
    return std::any_of(ranges_.begin(), ranges_.end(),
                       [pc](const std::pair<uint64_t, uint64_t>& r) { return pc >= r.first && pc < r.second; });
  }

 private:
  std::vector<std::pair<uint64_t, uint64_t>> ranges_;
};

// Whether procs (pid -> a Proc with `state` and `loops`) has pid in state
// `published` with pc in its loops.
template <typename Procs, typename State>
bool InLoopsOf(const Procs& procs, uint32_t pid, uint64_t pc, State published) {
  auto it = procs.find(pid);
  return it != procs.end() && it->second.state == published && it->second.loops.Holds(pc);
}

}  // namespace ehprof

#endif  // EHPROF_AGENT_INTERP_INTERP_LOOPS_H_
