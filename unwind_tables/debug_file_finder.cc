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

bool Acceptable(const std::string& candidate, const ElfFile& elf,
                const std::string& build_id) {
  if (!IsRegularFile(candidate) || SameFile(candidate, elf.path())) return false;
  if (build_id.empty()) return true;
  auto dbg = ElfFile::Open(candidate);
  return dbg.ok() && dbg->BuildId() == build_id;
}

}  // namespace

std::optional<std::string> FindSeparateDebugFile(const ElfFile& elf,
                                                 const std::string& root) {
  const std::string build_id = elf.BuildId();
  if (build_id.size() > 2) {
    std::string p = absl::StrCat(root, "/usr/lib/debug/.build-id/",
                                 build_id.substr(0, 2), "/", build_id.substr(2),
                                 ".debug");
    if (Acceptable(p, elf, build_id)) return p;
  }
  std::optional<std::string> link = elf.DebugLink();
  if (!link || link->find('/') != std::string::npos) return std::nullopt;
  std::error_code ec;
  std::string dir =
      std::filesystem::absolute(elf.path(), ec).lexically_normal().parent_path().string();
  if (ec) return std::nullopt;
  std::string host_dir = dir;  // the file's dir as the target system sees it
  if (!root.empty() && host_dir.rfind(root, 0) == 0) host_dir = host_dir.substr(root.size());
  for (const std::string& p :
       {absl::StrCat(dir, "/", *link), absl::StrCat(dir, "/.debug/", *link),
        absl::StrCat(root, "/usr/lib/debug", host_dir, "/", *link)}) {
    if (Acceptable(p, elf, build_id)) return p;
  }
  return std::nullopt;
}

}  // namespace ehprof
