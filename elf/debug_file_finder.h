// Finds the separate debug file of an ELF (Debian's -dbg / -dbgsym layout).
//
// The file being profiled may belong to any local user, and so may its
// .gnu_debuglink name and the directory it lies in: a link naming a FIFO
// beside it would hang a reader that opens it, one naming "../../dev/zero"
// or a symlink would make root read what the user points at. So only a
// plain file name is taken from a link, a name beside the file is never
// followed if it is a symlink, and every candidate is opened with
// OpenUntrustedFile (never blocking, a regular file of a sane size) and
// then used through that fd, never opened again by name.
#ifndef EHPROF_ELF_DEBUG_FILE_FINDER_H_
#define EHPROF_ELF_DEBUG_FILE_FINDER_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/unique_fd.h"
#include "base/untrusted_file.h"
#include "elf/elf_file.h"

namespace ehprof {

// A debug file found and checked: `fd` is the file that was checked,
// `path` names it (in messages, in the table's debug_file).
struct DebugFile {
  std::string path;
  UniqueFd fd;
};

// Tries, in order: <root>/usr/lib/debug/.build-id/xx/rest.debug, then the
// .gnu_debuglink name in the file's dir, its .debug/ subdir and
// <root>/usr/lib/debug/<dir>/. A candidate whose build-id differs from the
// file's, or that is the file itself, is rejected. `root` prefixes
// absolute lookups (e.g. /proc/PID/root for a container); empty for the
// host. A candidate that is there but refused (a FIFO, a device, a
// symlink beside the file, a link name that is not a plain file name) is
// said in `refused`, if given, naming the file and why.
std::optional<DebugFile> FindSeparateDebugFile(const ElfFile& elf, const std::string& root = "",
                                               std::vector<std::string>* refused = nullptr);

// The file `path` names: for one of our own /proc/self/fd/N links, the
// path of the file it holds (" (deleted)" when it was); else `path`.
std::string FilePathOf(const std::string& path);

// The directory `path` lies in (FilePathOf), where its .gnu_debuglink name
// is looked for; empty when the file was deleted.
std::string DirectoryOf(const std::string& path);

// Whether a .gnu_debuglink (or debugaltlink) name may be looked up: a
// plain file name, not "." or "..", without '/' or NUL.
bool IsPlainFileName(std::string_view name);

// Those places, in that order, as the target system names them: for a
// file with `build_id` and .gnu_debuglink `link` in directory `dir`. A
// link that is not a plain file name adds nothing.
std::vector<std::string> DebugFileCandidates(const std::string& build_id,
                                             const std::optional<std::string>& link,
                                             const std::string& dir);

// How a candidate may be opened: symlinks are followed only in the host's
// /usr/lib/debug, which root owns (its .build-id entries are symlinks on
// some distributions); anywhere else (beside the file, inside another
// root) a symlink is refused.
LinkPolicy DebugCandidateLinks(const std::string& candidate, const std::string& root);

// Whether the opened `candidate` may be the separate debug file of the ELF
// file open as `file_fd` whose build-id is `build_id`: a regular file, not
// that file itself, and of the same build-id when there is one. `name`
// names the candidate in messages.
bool AcceptableDebugFile(const UniqueFd& candidate, const std::string& name, int file_fd,
                         const std::string& build_id);

}  // namespace ehprof

#endif  // EHPROF_ELF_DEBUG_FILE_FINDER_H_
