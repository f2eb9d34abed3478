#include "agent/python/python_check.h"

#include <glob.h>
#include <stdlib.h>

#include <set>

#include "absl/strings/str_cat.h"
#include "agent/python/python_binary.h"

namespace ehprof {

namespace {

std::vector<std::string> Glob(const std::string& pattern) {
  std::vector<std::string> out;
  glob_t g{};
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
    for (size_t i = 0; i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
  }
  globfree(&g);
  return out;
}

}  // namespace

std::vector<InterpreterCheck> CheckInstalledInterpreters() {
  const char* home = getenv("HOME");
  const std::string pyenv = absl::StrCat(home ? home : "/root", "/.pyenv/versions/*");
  std::vector<std::string> candidates;
  for (const std::string& p :
       {std::string("/usr/bin/python3.*"), std::string("/usr/local/bin/python3.*"),
        std::string("/usr/lib/x86_64-linux-gnu/libpython3.*.so.1*"), std::string("/usr/local/lib/libpython3.*.so.1*"),
        pyenv + "/bin/python3.*", pyenv + "/lib/libpython3.*.so.1*"}) {
    for (std::string& c : Glob(p)) candidates.push_back(std::move(c));
  }
  std::vector<InterpreterCheck> out;
  std::set<std::string> seen;
  for (const std::string& path : candidates) {
    char* real = realpath(path.c_str(), nullptr);
    if (!real) continue;
    const std::string file = real;
    free(real);
    if (!seen.insert(file).second) continue;
    auto elf = ElfFile::Open(file);
    if (!elf.ok()) continue;  // python3.11-config and other scripts
    auto bin = InspectPythonBinary(*elf, file);
    InterpreterCheck c;
    c.path = file;
    if (bin.ok() && !*bin) continue;  // an executable that links libpython: listed as the library
    if (!bin.ok()) {
      c.detail = std::string(bin.status().message());
    } else {
      c.version = absl::StrCat((*bin)->major, ".", (*bin)->minor);
      c.readable = true;
      c.detail = (*bin)->eval_cold_found ? "eval loop and its .cold part found" : "eval loop found (no .cold part)";
    }
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace ehprof
