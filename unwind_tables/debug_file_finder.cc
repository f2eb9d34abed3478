#include "unwind_tables/debug_file_finder.h"

#include <sys/stat.h>

#include <filesystem>

#include "absl/strings/str_cat.h"

namespace ehprof {
namespace {

bool IsRegularFile(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool SameFile(const std::string& a, const std::string& b) {
  struct stat sa, sb;
  return ::stat(a.c_str(), &sa) == 0 && ::stat(b.c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

}  // namespace

bool AcceptableDebugFile(const std::string& candidate, const std::string& file,
                         const std::string& build_id) {
  if (!IsRegularFile(candidate) || SameFile(candidate, file)) return false;
  if (build_id.empty()) return true;
  auto dbg = ElfFile::Open(candidate);
  return dbg.ok() && dbg->BuildId() == build_id;
}

std::vector<std::string> DebugFileCandidates(const std::string& build_id,
                                             const std::optional<std::string>& link,
                                             const std::string& dir) {
  std::vector<std::string> out;
  if (build_id.size() > 2) {
    out.push_back(absl::StrCat("/usr/lib/debug/.build-id/", build_id.substr(0, 2), "/",
                               build_id.substr(2), ".debug"));
  }
  // A name with a slash would lead elsewhere than these directories.
  if (!link || link->find('/') != std::string::npos || dir.empty()) return out;
  for (const char* in : {"", "/.debug"}) out.push_back(absl::StrCat(dir, in, "/", *link));
  out.push_back(absl::StrCat("/usr/lib/debug", dir, "/", *link));
  return out;
}

std::optional<std::string> FindSeparateDebugFile(const ElfFile& elf,
                                                 const std::string& root) {
  std::error_code ec;
  std::string dir =
      std::filesystem::absolute(elf.path(), ec).lexically_normal().parent_path().string();
  if (ec) dir.clear();
  // The file's dir as the target system sees it.
  if (!root.empty() && dir.rfind(root, 0) == 0) {
    dir = dir.size() == root.size() ? "/" : dir.substr(root.size());
  }
  const std::string build_id = elf.BuildId();
  for (const std::string& c : DebugFileCandidates(build_id, elf.DebugLink(), dir)) {
    const std::string p = root + c;
    if (AcceptableDebugFile(p, elf.path(), build_id)) return p;
  }
  return std::nullopt;
}

}  // namespace ehprof
