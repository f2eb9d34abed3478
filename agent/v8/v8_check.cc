#include "agent/v8/v8_check.h"

#include <stdlib.h>

#include "absl/strings/str_cat.h"
#include "agent/v8/v8_binary.h"
#include "agent/v8/v8_tracker.h"
#include "elf/elf_file.h"

namespace ehprof {

std::vector<RuntimeCheck> CheckInstalledV8s() {
  const char* home = getenv("HOME");
  const std::string nvm = absl::StrCat(home ? home : "/root", "/.nvm/versions/node/*");
  std::vector<RuntimeCheck> out;
  for (const std::string& file :
       InstalledFiles({"/usr/bin/node*", "/usr/local/bin/node*", "/usr/lib/x86_64-linux-gnu/libnode.so*",
                       "/usr/lib/libnode.so*", "/usr/local/lib/libnode.so*", nvm + "/bin/node"})) {
    auto elf = ElfFile::Open(file);
    if (!elf.ok()) continue;  // a script (node-gyp and the like)
    auto bin = InspectV8Binary(*elf, file);
    if (bin.ok() && !*bin) continue;  // an executable that links libnode: listed as the library
    RuntimeCheck c;
    c.runtime = "V8";
    c.what = file;
    c.readable = bin.ok();
    c.detail = bin.ok() ? absl::StrCat((*bin)->metadata.size(),
                                       " v8dbg_* values found (each process's layout is built from them)")
                        : std::string(bin.status().message());
    out.push_back(std::move(c));
  }
  return out;
}

std::optional<RuntimeCheck> V8Tracker::CheckProcess(uint32_t pid) {
  absl::StatusOr<bool> attached = Attach(pid);
  // Not V8, or gone before its maps were read.
  if ((attached.ok() && !*attached) || procs_[pid].binary.empty()) return std::nullopt;
  RuntimeCheck c;
  c.runtime = "V8";
  c.what = ProcessLabel(static_cast<int>(pid)) + procs_[pid].binary;
  c.readable = attached.ok();
  c.detail = attached.ok() ? "v8dbg_* metadata found, layout built" : std::string(attached.status().message());
  return c;
}

}  // namespace ehprof
