// What the trackers of interpreters (agent/python, agent/ruby) share when
// they look at a process: where a mapping of a binary puts the binary's
// ELF addresses (LoadBias), and when a process that does not run the
// interpreter yet is looked at again (LookAgain).
#ifndef EHPROF_AGENT_PROCESS_LOOK_AGAIN_H_
#define EHPROF_AGENT_PROCESS_LOOK_AGAIN_H_

#include <cstdint>
#include <optional>
#include <span>

#include "agent/process/proc_maps.h"
#include "elf/elf_file.h"

namespace ehprof {

// Runtime address - ELF address for the binary whose PT_LOAD segments are
// `loads`, from one of its mappings; nullopt when the mapping lies in none.
std::optional<uint64_t> LoadBias(std::span<const ElfSegment> loads, const MapsEntry& e);

// A process not (yet) running the interpreter is looked at again once its
// mappings changed (MapsChanged: the maps read again, a mapping the kernel
// side added), 10 ms after the last look at the earliest, then twice as
// long each time, up to a second: a command just exec'd may not have
// mapped its libpython or libruby yet (1 in 6 one-second runs of a pyenv
// python3.12 lost every Python frame when the first retry came after a
// second). Whether a process runs the interpreter is read from its maps
// alone, so a process whose maps stayed as they were is not read again:
// on a busy host every tracker re-reading every other process's maps once
// a second was two thirds of the agent's CPU (bench/fleet_cost.py).
class LookAgain {
 public:
  // Whether to look now: always while the process is `unknown`; while it
  // is known to run none (`absent`), once its maps changed and the wait is
  // over.
  bool Due(bool unknown, bool absent, uint64_t now_ns);
  void MapsChanged() { maps_changed_ = true; }

 private:
  uint64_t checked_ns_ = 0;
  int absent_checks_ = 0;
  bool maps_changed_ = false;  // since the last look
};

// Tells pid's LookAgain in a tracker's procs (pid -> a struct with a
// LookAgain `look`) that its maps changed; a process the tracker has not
// looked at yet is looked at on its first sample anyway.
template <typename Procs>
void MapsChangedIn(Procs& procs, uint32_t pid) {
  if (auto it = procs.find(pid); it != procs.end()) it->second.look.MapsChanged();
}

}  // namespace ehprof

#endif  // EHPROF_AGENT_PROCESS_LOOK_AGAIN_H_
