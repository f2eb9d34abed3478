#include "absl/strings/str_cat.h"
#include "agent/ruby/ruby_tracker.h"

namespace ehprof {

std::optional<RuntimeCheck> RubyTracker::CheckProcess(uint32_t pid) {
  absl::StatusOr<bool> attached = Attach(pid);
  auto it = procs_.find(pid);
  // Not Ruby, or gone before its maps were read.
  if (it == procs_.end() || it->second.binary.empty()) return std::nullopt;
  RuntimeCheck c;
  c.runtime = "Ruby";
  c.what = ProcessLabel(static_cast<int>(pid)) + it->second.binary;
  c.version = it->second.version;
  c.readable = attached.ok() && *attached;
  c.detail = !attached.ok() ? std::string(attached.status().message())
             : c.readable   ? "VM loop, execution context slot and symbol table found"
                            : "its interpreter is still starting (no symbol table yet)";
  return c;
}

}  // namespace ehprof
