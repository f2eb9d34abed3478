#include "absl/strings/str_cat.h"
#include "agent/php/php_tracker.h"

namespace ehprof {

std::optional<RuntimeCheck> PhpTracker::CheckProcess(uint32_t pid) {
  absl::StatusOr<bool> attached = Attach(pid);
  auto it = procs_.find(pid);
  // Not PHP, or gone before its maps were read.
  if (it == procs_.end() || it->second.binary.empty()) return std::nullopt;
  Proc& p = it->second;
  RuntimeCheck c;
  c.runtime = "PHP";
  c.what = ProcessLabel(static_cast<int>(pid)) + p.binary;
  c.version = p.version;
  c.readable = attached.ok() && *attached;
  if (!attached.ok()) {
    c.detail = std::string(attached.status().message());
    return c;
  }
  ProcessMemory mem(static_cast<pid_t>(pid));
  std::optional<absl::Status> frames = CheckPhpFrames(mem, p.layout, p.current_execute_data);
  if (!frames) {
    c.detail = "VM found; no PHP code running now";
  } else if (frames->ok()) {
    c.detail = "VM and frames read";
  } else {
    c.readable = false;
    c.detail = absl::StrCat("its frames do not match the offsets read from the binary: ", frames->message());
  }
  return c;
}

}  // namespace ehprof
