// Which executables a recorded command exec'd last time (g++ execs cc1plus,
// as, collect2, ld), kept beside the table cache, so the next recording of
// the same command loads their tables before the command starts, as it
// does for the command's own executable and libraries: an exec'd binary's
// table is then ready (and known to the kernel) at its first sample, not
// tens of milliseconds later.
#ifndef EHPROF_AGENT_RECORD_EXEC_HINTS_H_
#define EHPROF_AGENT_RECORD_EXEC_HINTS_H_

#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace ehprof {

// At most this many executables are remembered for a command.
inline constexpr size_t kMaxExecHints = 64;

// The executables `command_exe` exec'd when last recorded; empty when there
// is no hint file (or a bad one: hints are only a prefetch).
std::vector<std::string> ReadExecHints(const std::string& cache_dir, const std::string& command_exe);
// Replaces the hint file (0600, written atomically) with `exes` (absolute
// paths; the first kMaxExecHints).
absl::Status WriteExecHints(const std::string& cache_dir, const std::string& command_exe,
                            const std::set<std::string>& exes);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_EXEC_HINTS_H_
