// Finds the separate debug file of an ELF (Debian's -dbg / -dbgsym layout).
#ifndef EHPROF_UNWIND_TABLES_DEBUG_FILE_FINDER_H_
#define EHPROF_UNWIND_TABLES_DEBUG_FILE_FINDER_H_

#include <optional>
#include <string>
#include <vector>

#include "unwind_tables/elf_file.h"

namespace ehprof {

// Tries, in order: <root>/usr/lib/debug/.build-id/xx/rest.debug, then the
// .gnu_debuglink name in the file's dir, its .debug/ subdir and
// <root>/usr/lib/debug/<dir>/. A candidate whose build-id differs from the
// file's is rejected. `root` prefixes absolute lookups (e.g.
// /proc/PID/root for a container); empty for the host.
std::optional<std::string> FindSeparateDebugFile(const ElfFile& elf,
                                                 const std::string& root = "");

// Those places, in that order, as the target system names them: for a
// file with `build_id` and .gnu_debuglink `link` in directory `dir`.
std::vector<std::string> DebugFileCandidates(const std::string& build_id,
                                             const std::optional<std::string>& link,
                                             const std::string& dir);

// Whether `candidate` may be the separate debug file of the ELF file at
// `file` whose build-id is `build_id`: a regular file, not `file` itself,
// and of the same build-id when there is one.
bool AcceptableDebugFile(const std::string& candidate, const std::string& file,
                         const std::string& build_id);

}  // namespace ehprof

#endif  // EHPROF_UNWIND_TABLES_DEBUG_FILE_FINDER_H_
