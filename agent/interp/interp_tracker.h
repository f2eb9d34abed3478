// What every tracker of an interpreter that is neither CPython, HotSpot nor
// V8 (Ruby, PHP, Perl) is to the recording: it looks at each process,
// publishes the offsets its BPF walk needs, and names that walk's frames
// (EHP_FRAME_INTERP words of its kind, bpf/ehprof_abi.h) into the one
// InterpFrameTable the recording shares, while the process is alive. The
// recorder, `ehprof check` and the agent hold these through this interface
// only, so a new runtime is one class and one BPF walk.
#ifndef EHPROF_AGENT_INTERP_INTERP_TRACKER_H_
#define EHPROF_AGENT_INTERP_INTERP_TRACKER_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "agent/interp/interp_frame_table.h"
#include "agent/process/runtime_check.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

class InterpTracker {
 public:
  virtual ~InterpTracker() = default;
  // The enum ehp_interp_kind of the frames it names.
  virtual ehp_interp_kind kind() const = 0;
  // Looks at a process the first time it is seen (again after an exec,
  // and, while it runs no interpreter of this kind yet, once its maps
  // changed: agent/process/look_again.h).
  virtual void Notice(uint32_t pid, uint64_t now_ns) = 0;
  // pid's mappings changed (read again, or the kernel side added one).
  virtual void MapsChanged(uint32_t pid) = 0;
  // Notice, then rewrites each EHP_FRAME_INTERP word of its kind in user
  // (leaf first, as the walk left them) to InterpFrameTable::Word of the
  // frame it names; a frame it cannot read still gets a word (an entry
  // saying what is unknown), never a wrong name. It may replace one word
  // by several (a frame and the frames inlined into it).
  virtual void NameFrames(uint32_t pid, uint64_t now_ns, std::vector<uint64_t>* user) = 0;
  virtual void Exec(uint32_t pid) = 0;
  virtual void Exit(uint32_t pid) = 0;
  // Process pid's interpreter after one look, as `ehprof check` lists it;
  // nullopt when pid runs none of this kind.
  virtual std::optional<RuntimeCheck> CheckProcess(uint32_t pid) = 0;
  // Whether pc lies in the interpreter loop pid's entry was published with
  // (interp_loops.h): where a walk finished late lost this runtime's frames.
  virtual bool InInterpreterLoop(uint32_t pid, uint64_t pc) const = 0;
  // The shared table was emptied (the agent, between intervals): every
  // cached index into it is stale.
  virtual void ForgetFrames() = 0;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_INTERP_INTERP_TRACKER_H_
