#include "agent/process/runtime_check.h"

#include <glob.h>
#include <stdlib.h>

#include <fstream>
#include <set>

#include "absl/strings/str_cat.h"
#include "base/printable_text.h"

namespace ehprof {

std::vector<std::string> InstalledFiles(const std::vector<std::string>& patterns) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const std::string& pattern : patterns) {
    glob_t g{};
    if (glob(pattern.c_str(), 0, nullptr, &g) == 0) {
      for (size_t i = 0; i < g.gl_pathc; ++i) {
        char* real = realpath(g.gl_pathv[i], nullptr);
        if (!real) continue;
        if (seen.insert(real).second) out.push_back(real);
        free(real);
      }
    }
    globfree(&g);
  }
  return out;
}

std::string ProcessLabel(int pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/comm"));
  std::string comm;
  std::getline(in, comm);
  // A comm is 15 bytes at most, but its owner chose them.
  if (comm.size() > 15) comm.resize(15);
  return absl::StrCat("pid ", pid, " (", PrintableText(comm), ") ");
}

}  // namespace ehprof
