// The CPython interpreters installed here, as `ehprof check` lists them:
// each binary holding an interpreter (a static python3.X, a libpython3.X.so)
// and whether ehprof can read its frames.
#ifndef EHPROF_AGENT_PYTHON_PYTHON_CHECK_H_
#define EHPROF_AGENT_PYTHON_PYTHON_CHECK_H_

#include <string>
#include <vector>

namespace ehprof {

struct InterpreterCheck {
  std::string path;
  std::string version;  // "3.11", empty when unknown
  bool readable = false;
  std::string detail;   // "eval loop and its .cold part found", or why not readable
};

// Looks at /usr/bin, /usr/local/bin, their lib folders and pyenv's versions.
std::vector<InterpreterCheck> CheckInstalledInterpreters();

}  // namespace ehprof

#endif  // EHPROF_AGENT_PYTHON_PYTHON_CHECK_H_
