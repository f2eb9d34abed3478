// The files a command will map when it starts: its executable, the
// program interpreter and the DT_NEEDED closure, resolved like ld.so does
// for ordinary installs (RUNPATH/RPATH, then the default directories).
// ehprof builds their tables before letting the command run, so its first
// samples already unwind.
#ifndef EHPROF_AGENT_PROCESS_EXEC_CLOSURE_H_
#define EHPROF_AGENT_PROCESS_EXEC_CLOSURE_H_

#include <string>
#include <vector>

namespace ehprof {

// `command` as execvp would find it (PATH search for names without '/').
std::string FindExecutable(const std::string& command);

// Paths of the executable and the libraries it needs; best effort (what
// cannot be found is left out: ld.so's cache and dlopen are not modelled).
std::vector<std::string> ExecClosure(const std::string& executable);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PROCESS_EXEC_CLOSURE_H_
