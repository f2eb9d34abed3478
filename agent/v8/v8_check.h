// The V8 binaries installed here (node, libnode.so), as `ehprof check`
// lists them: whether each carries the v8dbg_* metadata its JavaScript
// frames are read by. A process's layout is built from the values in its
// memory, so only V8Tracker::CheckProcess says whether one reads.
#ifndef EHPROF_AGENT_V8_V8_CHECK_H_
#define EHPROF_AGENT_V8_V8_CHECK_H_

#include <vector>

#include "agent/process/runtime_check.h"

namespace ehprof {

// node* in /usr/bin and /usr/local/bin, libnode.so* in the lib folders and
// nvm's versions under $HOME.
std::vector<RuntimeCheck> CheckInstalledV8s();

}  // namespace ehprof

#endif  // EHPROF_AGENT_V8_V8_CHECK_H_
