#include "agent/process/exec_closure.h"

#include <elf.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "base/byte_reader.h"
#include "elf/elf_file.h"

namespace ehprof {
namespace {

constexpr size_t kMaxFiles = 512;  // a hostile DT_NEEDED web stays bounded

#if defined(__aarch64__)
#define EHP_MULTIARCH "aarch64-linux-gnu"
#else
#define EHP_MULTIARCH "x86_64-linux-gnu"
#endif
const char* const kDefaultDirs[] = {"/lib/" EHP_MULTIARCH, "/usr/lib/" EHP_MULTIARCH,
                                    "/lib64", "/usr/lib64", "/lib", "/usr/lib",
                                    "/usr/local/lib"};

struct Dynamic {
  std::vector<std::string> needed;
  std::vector<std::string> search;  // RUNPATH or RPATH entries, $ORIGIN expanded
  std::string interp;
};

Dynamic ReadDynamic(const ElfFile& elf) {
  Dynamic d;
  auto dyn = elf.Section(".dynamic");
  auto str = elf.Section(".dynstr");
  auto interp = elf.Section(".interp");
  if (interp.ok() && *interp && !(*interp)->data.empty()) {
    auto data = (*interp)->data;
    d.interp.assign(reinterpret_cast<const char*>(data.data()),
                    strnlen(reinterpret_cast<const char*>(data.data()), data.size()));
  }
  if (!dyn.ok() || !*dyn || !str.ok() || !*str) return d;
  auto strtab = (*str)->data;
  auto name = [&](uint64_t off) -> std::string {
    if (off >= strtab.size()) return "";
    const char* p = reinterpret_cast<const char*>(strtab.data()) + off;
    return std::string(p, strnlen(p, strtab.size() - off));
  };
  const std::string origin = std::filesystem::path(elf.path()).parent_path().string();
  ByteReader r((*dyn)->data);
  while (r.remaining() >= 16) {
    const int64_t tag = r.s64();
    const uint64_t val = r.u64();
    if (tag == DT_NULL) break;
    if (tag == DT_NEEDED) d.needed.push_back(name(val));
    if (tag == DT_RUNPATH || tag == DT_RPATH) {
      for (absl::string_view dir : absl::StrSplit(name(val), ':', absl::SkipEmpty())) {
        d.search.push_back(absl::StrReplaceAll(dir, {{"$ORIGIN", origin}, {"${ORIGIN}", origin}}));
      }
    }
  }
  return d;
}

}  // namespace

std::string FindExecutable(const std::string& command) {
  if (command.find('/') != std::string::npos) return command;
  const char* path = std::getenv("PATH");
  for (absl::string_view dir : absl::StrSplit(path ? path : "/usr/bin:/bin", ':', absl::SkipEmpty())) {
    std::string candidate = std::string(dir) + "/" + command;
    if (::access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

std::vector<std::string> ExecClosure(const std::string& executable) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  // How many times each file was queued, by its canonical path (/lib and
  // /usr/lib name the same files): once for each DT_NEEDED naming it.
  std::map<std::string, size_t> needed_by;
  std::deque<std::string> todo = {executable};
  size_t firsts = 1;  // the executable, then its interpreter: never reordered
  while (!todo.empty() && out.size() < kMaxFiles) {
    std::string path = todo.front();
    todo.pop_front();
    std::error_code ec;
    std::string real = std::filesystem::canonical(path, ec).string();
    if (ec) continue;
    ++needed_by[real];
    if (!seen.insert(real).second) continue;
    auto elf = ElfFile::Open(real);
    if (!elf.ok()) continue;
    out.push_back(real);
    Dynamic d = ReadDynamic(*elf);
    if (!d.interp.empty()) {
      if (out.size() == 1) firsts = 2;
      todo.push_back(d.interp);
    }
    for (const std::string& lib : d.needed) {
      if (lib.empty()) continue;
      if (lib.find('/') != std::string::npos) {
        todo.push_back(lib);
        continue;
      }
      std::vector<std::string> dirs = d.search;
      dirs.insert(dirs.end(), std::begin(kDefaultDirs), std::end(kDefaultDirs));
      for (const std::string& dir : dirs) {
        std::string candidate = dir + "/" + lib;
        if (::access(candidate.c_str(), R_OK) == 0) {
          todo.push_back(candidate);
          break;
        }
      }
    }
  }
  // The libraries most of the closure needs first (libc, libm before a
  // plugin only the executable names): their tables are built and loaded
  // in this order, so when the table maps are too small (--table-memory)
  // the ones refused are those the fewest files call into.
  if (out.size() > firsts) {
    std::stable_sort(out.begin() + static_cast<std::ptrdiff_t>(firsts), out.end(),
                     [&](const std::string& a, const std::string& b) { return needed_by[a] > needed_by[b]; });
  }
  return out;
}

}  // namespace ehprof
