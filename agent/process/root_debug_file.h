// The separate debug file of a file a process maps, found inside the
// process's root. A container keeps its packages' debug files in its own
// /usr/lib/debug (and its .gnu_debuglink targets beside its binaries),
// where the host-side lookup (FindSeparateDebugFile) never looks: a
// stripped program in a container would lose its function names.
#ifndef EHPROF_AGENT_PROCESS_ROOT_DEBUG_FILE_H_
#define EHPROF_AGENT_PROCESS_ROOT_DEBUG_FILE_H_

#include <string>

#include "absl/status/statusor.h"
#include "agent/process/proc_root.h"
#include "base/unique_fd.h"

namespace ehprof {

// `mapped` is the file the process maps (an fd ehprof holds), `path` its
// name in the process's root. The places FindSeparateDebugFile tries, in
// its order (DebugFileCandidates), each opened through `root` (so that the
// container's symlinks cannot lead to the host's files); the first whose
// build-id is the mapped file's (any, when it has none) and that is not
// the mapped file itself. NotFound when there is none.
absl::StatusOr<UniqueFd> OpenDebugFileInRoot(const ProcessRoot& root, const std::string& path,
                                            const UniqueFd& mapped);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PROCESS_ROOT_DEBUG_FILE_H_
