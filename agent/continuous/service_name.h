// The service a process belongs to, as Pyroscope's `service_name` label:
// its container (from the cgroup path the runtime gave it), else its
// systemd unit, else its executable's name.
#ifndef EHPROF_AGENT_CONTINUOUS_SERVICE_NAME_H_
#define EHPROF_AGENT_CONTINUOUS_SERVICE_NAME_H_

#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace ehprof {

// From the text of /proc/PID/cgroup (cgroup v2's "0::/path" line, else the
// first v1 line's path): "container/ID" (the first 12 hex digits, as
// `docker ps` shows it) for docker, containerd, CRI-O and podman scopes;
// the unit for systemd services ("nginx.service"); empty otherwise (user
// sessions, init.scope, the root).
std::string ServiceFromCgroup(const std::string& cgroup_file_text);

// Per-process service names, looked up once per pid and forgotten when
// Prune says the pid was not seen lately.
class ServiceNames {
 public:
  explicit ServiceNames(std::string proc_root = "/proc") : proc_(std::move(proc_root)) {}
  // comm is the fallback (the executable's name as the kernel has it).
  const std::string& Of(uint32_t pid, const std::string& comm);
  // Drops pids not looked up since the previous Prune.
  void Prune();
  size_t size() const { return names_.size(); }

 private:
  struct Entry {
    std::string name;
    bool seen = true;
  };
  std::string proc_;
  absl::flat_hash_map<uint32_t, Entry> names_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_SERVICE_NAME_H_
