// Where a process's JIT perf map is and how it is opened. A JIT writes
// perf-PID.map in the /tmp it sees, under the pid it sees: in a container
// (a mount and pid namespace) that is its own root's /tmp and its pid in
// the innermost pid namespace (the last NStgid of /proc/PID/status). So the
// map is reached through /proc/PID/root/tmp, which also works when ehprof
// itself has a private /tmp (the systemd unit's PrivateTmp=yes).
//
// Everything under that /tmp is the user's: no component is followed if it
// is a symbolic link (a link resolved through /proc/PID/root would be
// resolved in ehprof's root, not the process's), nor is a FIFO or device
// waited on; the caller checks S_ISREG on the fd.
#ifndef EHPROF_AGENT_RESOLVE_PERF_MAP_FILE_H_
#define EHPROF_AGENT_RESOLVE_PERF_MAP_FILE_H_

#include <cstdint>
#include <optional>
#include <string>

#include "base/unique_fd.h"

namespace ehprof {

// pid's tgid in its innermost pid namespace (NStgid's last field; the pid
// itself when the kernel shows no NStgid); nullopt when the process is gone.
std::optional<uint32_t> InnermostPid(uint32_t pid);

struct PerfMapFile {
  UniqueFd fd;       // invalid: none (or not openable safely)
  std::string name;  // how the map is named in profiles and warnings
};

// The perf map of pid: with `dir` empty, the process's own
// /tmp/perf-NSPID.map (named so), or ehprof's /tmp/perf-PID.map once the
// process is gone; else DIR/perf-PID.map (a directory the caller chose,
// pids as ehprof sees them).
PerfMapFile OpenPerfMap(uint32_t pid, const std::string& dir);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RESOLVE_PERF_MAP_FILE_H_
