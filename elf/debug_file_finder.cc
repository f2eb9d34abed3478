#include "elf/debug_file_finder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"

namespace ehprof {
namespace {

constexpr char kDebugDir[] = "/usr/lib/debug/";

bool SameFile(int a, int b) {
  struct stat sa, sb;
  return ::fstat(a, &sa) == 0 && ::fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
         sa.st_ino == sb.st_ino;
}

}  // namespace

std::string FilePathOf(const std::string& path) {
  if (path.rfind("/proc/self/fd/", 0) != 0) return path;
  char buf[4096];
  const ssize_t n = ::readlink(path.c_str(), buf, sizeof(buf));
  if (n <= 0 || static_cast<size_t>(n) >= sizeof(buf)) return path;
  return std::string(buf, static_cast<size_t>(n));
}

std::string DirectoryOf(const std::string& path) {
  const std::string file = FilePathOf(path);
  if (file.empty() || file[0] != '/' || file.ends_with(" (deleted)")) return "";
  std::error_code ec;
  std::string dir = std::filesystem::absolute(file, ec).lexically_normal().parent_path().string();
  return ec ? "" : dir;
}

bool IsPlainFileName(std::string_view name) {
  return !name.empty() && name != "." && name != ".." &&
         name.find_first_of(std::string_view("/\0", 2)) == std::string_view::npos;
}

LinkPolicy DebugCandidateLinks(const std::string& candidate, const std::string& root) {
  return root.empty() && candidate.rfind(kDebugDir, 0) == 0 ? LinkPolicy::kFollow
                                                            : LinkPolicy::kNoFollow;
}

bool AcceptableDebugFile(const UniqueFd& candidate, const std::string& name, int file_fd,
                         const std::string& build_id) {
  if (!candidate.valid() || !CheckUntrustedFd(candidate.get(), name).ok()) return false;
  if (file_fd >= 0 && SameFile(candidate.get(), file_fd)) return false;
  if (build_id.empty()) return true;
  UniqueFd dup(::fcntl(candidate.get(), F_DUPFD_CLOEXEC, 0));
  if (!dup.valid()) return false;
  auto dbg = ElfFile::FromFd(std::move(dup), name);
  return dbg.ok() && dbg->BuildId() == build_id;
}

std::vector<std::string> DebugFileCandidates(const std::string& build_id,
                                             const std::optional<std::string>& link,
                                             const std::string& dir) {
  std::vector<std::string> out;
  if (build_id.size() > 2) {
    out.push_back(absl::StrCat(kDebugDir, ".build-id/", build_id.substr(0, 2), "/",
                               build_id.substr(2), ".debug"));
  }
  // A name with a slash or a ".." would lead elsewhere than these
  // directories.
  if (!link || !IsPlainFileName(*link) || dir.empty()) return out;
  for (const char* in : {"", "/.debug"}) out.push_back(absl::StrCat(dir, in, "/", *link));
  out.push_back(absl::StrCat("/usr/lib/debug", dir, "/", *link));
  return out;
}

std::optional<DebugFile> FindSeparateDebugFile(const ElfFile& elf, const std::string& root,
                                               std::vector<std::string>* refused) {
  std::string dir = DirectoryOf(elf.path());
  // The file's dir as the target system sees it.
  if (!root.empty() && dir.rfind(root, 0) == 0) {
    dir = dir.size() == root.size() ? "/" : dir.substr(root.size());
  }
  const std::string build_id = elf.BuildId();
  const std::optional<std::string> link = elf.DebugLink();
  if (refused != nullptr && link && !IsPlainFileName(*link)) {
    refused->push_back(absl::StrCat(FilePathOf(elf.path()), ": its .gnu_debuglink names \"", *link,
                                    "\", not a plain file name: not looked up"));
  }
  for (const std::string& c : DebugFileCandidates(build_id, link, dir)) {
    std::string p = root + c;
    absl::StatusOr<UniqueFd> fd = OpenUntrustedFile(p, DebugCandidateLinks(c, root));
    if (fd.ok() && AcceptableDebugFile(*fd, p, elf.fd(), build_id)) {
      return DebugFile{std::move(p), *std::move(fd)};
    }
    if (refused != nullptr && !fd.ok() &&
        (absl::IsFailedPrecondition(fd.status()) || absl::IsResourceExhausted(fd.status()))) {
      refused->push_back(
          absl::StrCat("debug file of ", FilePathOf(elf.path()), ": ", fd.status().message()));
    }
  }
  return std::nullopt;
}

}  // namespace ehprof
