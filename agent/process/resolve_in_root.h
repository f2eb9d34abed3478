// openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) done in user space, for
// where openat2 is refused: systemd's RestrictSUIDSGID= (which DynamicUser=
// implies, so the agent's unit has it) makes openat2 fail with ENOSYS, as
// do kernels before 5.6.
//
// Each component is opened O_PATH|O_NOFOLLOW below the directory before it;
// a symbolic link is read and its target resolved again, from the root when
// absolute, from where it was otherwise; ".." goes back to the directory
// walked before (the kernel's ".." is never asked, so a rename racing the
// walk cannot lead above the root, and ".." at the root stays there); a
// link on procfs (a magic link) is refused; at most 40 links.
#ifndef EHPROF_AGENT_PROCESS_RESOLVE_IN_ROOT_H_
#define EHPROF_AGENT_PROCESS_RESOLVE_IN_ROOT_H_

#include <string>

#include "base/unique_fd.h"

namespace ehprof {

// `path` below the directory `root` (an O_PATH fd) as the root sees it: an
// O_PATH|O_CLOEXEC fd of what it names, or an invalid fd with errno set
// (ELOOP: too many links or a magic link; ENOTDIR, ENOENT, EACCES as
// openat gives them).
UniqueFd ResolveInRoot(int root, const std::string& path);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PROCESS_RESOLVE_IN_ROOT_H_
