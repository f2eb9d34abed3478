#include "agent/process/root_debug_file.h"

#include <filesystem>

#include "absl/strings/str_cat.h"
#include "elf/debug_file_finder.h"
#include "elf/elf_file.h"

namespace ehprof {
namespace {

std::string FdPath(const UniqueFd& fd) { return absl::StrCat("/proc/self/fd/", fd.get()); }

}  // namespace

absl::StatusOr<UniqueFd> OpenDebugFileInRoot(const ProcessRoot& root, const std::string& path,
                                            const UniqueFd& mapped) {
  absl::StatusOr<ElfFile> elf = ElfFile::Open(FdPath(mapped));
  if (!elf.ok()) return elf.status();
  const std::string build_id = elf->BuildId();
  const std::string dir = std::filesystem::path(path).lexically_normal().parent_path().string();
  for (const std::string& candidate : DebugFileCandidates(build_id, elf->DebugLink(), dir)) {
    absl::StatusOr<UniqueFd> fd = root.OpenFile(candidate);
    if (fd.ok() && AcceptableDebugFile(*fd, candidate, mapped.get(), build_id)) return fd;
  }
  return absl::NotFoundError(absl::StrCat("pid ", root.pid(), ": no separate debug file of ", path,
                                          " in its root"));
}

}  // namespace ehprof
