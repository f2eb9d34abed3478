// The CPython interpreters installed here, as `ehprof check` lists them:
// each binary holding an interpreter (a static python3.X, a libpython3.X.so)
// and whether ehprof can read its frames.
#ifndef EHPROF_AGENT_PYTHON_PYTHON_CHECK_H_
#define EHPROF_AGENT_PYTHON_PYTHON_CHECK_H_

#include <vector>

#include "agent/process/runtime_check.h"

namespace ehprof {

// Looks at /usr/bin, /usr/local/bin, their lib folders and pyenv's versions.
// Each line's version is "3.11"; its detail "eval loop and its .cold part
// found", or why not readable.
std::vector<RuntimeCheck> CheckInstalledInterpreters();

}  // namespace ehprof

#endif  // EHPROF_AGENT_PYTHON_PYTHON_CHECK_H_
