// What a recording loop needs around it: the stop signals, the clocks it
// compares with BPF timestamps and its own CPU time, and small /proc
// lookups for targets. Shared by `record` and `agent`.
#ifndef EHPROF_AGENT_RECORD_RUN_CONTROL_H_
#define EHPROF_AGENT_RECORD_RUN_CONTROL_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

namespace ehprof {

// Set from signal handlers: the signal number that asked to stop.
extern std::atomic<int> g_stop_signal;
// SIGINT, SIGTERM and SIGHUP set g_stop_signal (no SA_RESTART, so a
// blocking poll returns); SIGPIPE is ignored.
void InstallStopSignalHandlers();
// One fd is kept per mapped file (for symbolizing files replaced or
// deleted meanwhile); -a on a big machine needs more than the soft limit.
// Raises the soft limit of open files to the hard one.
void RaiseFileLimit();
// "SIGINT", "SIGTERM", "SIGHUP" or "a signal".
const char* SignalName(int sig);

// This process's CPU time (user + system) so far.
uint64_t CpuTimeNs();
// CLOCK_MONOTONIC, the clock bpf_ktime_get_ns reads.
uint64_t NowNs();

bool ProcessExists(uint32_t pid);
// The thread group of a thread id, from /proc/TID/status.
std::optional<uint32_t> TgidOf(uint32_t tid);
// Every pid in /proc now.
std::vector<uint32_t> AllPids();

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_RUN_CONTROL_H_
