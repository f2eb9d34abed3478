// What `ehprof check` says of a language runtime's binary or running
// process, whichever the runtime (CPython, HotSpot, V8): one line each,
// with whether ehprof reads its frames. Each runtime's folder fills these
// (python_check, jvm_check, v8_check and the trackers' CheckProcess); the
// command prints them.
#ifndef EHPROF_AGENT_PROCESS_RUNTIME_CHECK_H_
#define EHPROF_AGENT_PROCESS_RUNTIME_CHECK_H_

#include <string>
#include <vector>

namespace ehprof {

struct RuntimeCheck {
  std::string runtime;  // "CPython", "HotSpot", "V8"
  std::string what;     // the binary, or "pid N (comm) BINARY" for a running process
  std::string version;  // empty: unknown
  bool readable = false;
  std::string detail;   // what was found, or why its frames are not read
};

// The files `patterns` (glob(3) patterns) name, each resolved through its
// links and listed once, in the patterns' order.
std::vector<std::string> InstalledFiles(const std::vector<std::string>& patterns);

// "pid N (comm) " for a running process's line.
std::string ProcessLabel(int pid);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PROCESS_RUNTIME_CHECK_H_
