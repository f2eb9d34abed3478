#include "agent/python/python_check.h"

#include <stdlib.h>

#include "absl/strings/str_cat.h"
#include "agent/python/python_binary.h"
#include "agent/python/python_tracker.h"

namespace ehprof {

std::vector<RuntimeCheck> CheckInstalledInterpreters() {
  const char* home = getenv("HOME");
  const std::string pyenv = absl::StrCat(home ? home : "/root", "/.pyenv/versions/*");
  std::vector<RuntimeCheck> out;
  for (const std::string& file : InstalledFiles(
           {"/usr/bin/python3.*", "/usr/local/bin/python3.*", "/usr/lib/x86_64-linux-gnu/libpython3.*.so.1*",
            "/usr/local/lib/libpython3.*.so.1*", pyenv + "/bin/python3.*", pyenv + "/lib/libpython3.*.so.1*"})) {
    auto elf = ElfFile::Open(file);
    if (!elf.ok()) continue;  // python3.11-config and other scripts
    auto bin = InspectPythonBinary(*elf, file);
    RuntimeCheck c;
    c.runtime = "CPython";
    c.what = file;
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

std::optional<RuntimeCheck> PythonTracker::CheckProcess(uint32_t pid) {
  absl::StatusOr<bool> attached = Attach(pid);
  auto it = procs_.find(pid);
  // Not Python, or gone before its maps were read.
  if (it == procs_.end() || it->second.binary.empty()) return std::nullopt;
  RuntimeCheck c;
  c.runtime = "CPython";
  c.what = ProcessLabel(static_cast<int>(pid)) + it->second.binary;
  c.version = it->second.version;
  c.readable = attached.ok() && *attached;
  c.detail = !attached.ok() ? std::string(attached.status().message())
             : c.readable   ? "interpreter state and code objects read"
                            : "its interpreter is still starting (no thread state, or frames in flux)";
  return c;
}

}  // namespace ehprof
