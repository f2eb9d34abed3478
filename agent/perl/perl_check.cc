#include "agent/perl/perl_tracker.h"

namespace ehprof {

std::optional<RuntimeCheck> PerlTracker::CheckProcess(uint32_t pid) {
  absl::StatusOr<bool> attached = Attach(pid);
  auto it = procs_.find(pid);
  // Not Perl, or gone before its maps were read.
  if (it == procs_.end() || it->second.binary.empty()) return std::nullopt;
  RuntimeCheck c;
  c.runtime = "Perl";
  c.what = ProcessLabel(static_cast<int>(pid)) + it->second.binary;
  c.version = it->second.version;
  c.readable = attached.ok() && *attached;
  c.detail = !attached.ok() ? std::string(attached.status().message())
             : c.readable   ? "run loop, interpreter TLS slot and context layout found"
                            : "its interpreter is still starting (libperl not relocated yet)";
  return c;
}

}  // namespace ehprof
