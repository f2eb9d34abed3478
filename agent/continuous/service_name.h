// The service a process belongs to, as Pyroscope's `service_name` label:
// its Kubernetes pod or container (from the cgroup path the runtime gave
// it), else its systemd unit, else its executable's name; and the labels
// its cgroup gives its series (container.id, k8s.pod.uid).
#ifndef EHPROF_AGENT_CONTINUOUS_SERVICE_NAME_H_
#define EHPROF_AGENT_CONTINUOUS_SERVICE_NAME_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace ehprof {

// From the text of /proc/PID/cgroup (cgroup v2's "0::/path" line, else the
// first v1 line's path): "container/ID" (the first 12 hex digits, as
// `docker ps` shows it) for docker, containerd, CRI-O and podman scopes;
// the unit for systemd services ("nginx.service"); empty otherwise (user
// sessions, init.scope, the root).
std::string ServiceFromCgroup(const std::string& cgroup_file_text);

// The cgroup-derived labels a series may carry (OpenTelemetry's names; a
// Pyroscope label has '_' for '.'), chosen with --cgroup-labels.
enum CgroupLabels : unsigned {
  kNoCgroupLabels = 0,
  kContainerIdLabel = 1,  // container.id: the runtime's full id
  kPodUidLabel = 2,       // k8s.pod.uid
  kAllCgroupLabels = 3,
};
// "container.id,k8s.pod.uid", "none", ...: false for an unknown name.
bool ParseCgroupLabels(absl::string_view list, unsigned* out);

// A series of the agent: its service name and its cgroup labels, kept as
// one string (SeriesKey) where the interval keys its stacks by service.
struct ServiceSeries {
  std::string name;
  std::vector<std::pair<std::string, std::string>> labels;
};
// name, then "\x1fK=V" for each label (a service name is printable text:
// it has no \x1f; label values are hex and '-').
std::string SeriesKey(const ServiceSeries& s);
ServiceSeries SplitSeriesKey(absl::string_view key);

// Per-process service names, looked up once per pid and forgotten when
// Prune says the pid was not seen lately; made printable
// (base/printable_text.h): comms and cgroup names are chosen by users,
// and Pyroscope refuses a whole push for one name that is not UTF-8.
//
// Bounded: each name is a series in Pyroscope and a label set there, and a
// user who starts processes with random comms would otherwise grow them
// without end. At most max_per_interval distinct names are given out
// between two Prunes; past that, a process's samples go to kOverflow
// (counted). Names that had samples in the previous interval keep their
// place in the next, so a host's real services are not pushed out by a
// burst of new names; a place unused for a whole interval is given up.
class ServiceNames {
 public:
  // Far above a real host: only services with CPU samples in one interval
  // count, and a Kubernetes node runs at most 110 pods by default, a busy
  // systemd host a few hundred units.
  static constexpr size_t kDefaultMaxPerInterval = 500;
  // Longer than any comm (15 bytes), neither a unit (.service) nor a
  // container: no process is named this by itself.
  static constexpr char kOverflow[] = "ehprof-other-services";

  // fixed_name: every process's service name (--service-name), its
  // cgroup labels still its own; empty: per process.
  explicit ServiceNames(std::string proc_root = "/proc", size_t max_per_interval = kDefaultMaxPerInterval,
                        unsigned labels = kAllCgroupLabels, std::string fixed_name = "")
      : proc_(std::move(proc_root)), max_(max_per_interval), labels_(labels), fixed_(std::move(fixed_name)) {}
  // The process's SeriesKey. comm is the fallback name (the executable's
  // name as the kernel has it).
  const std::string& Of(uint32_t pid, const std::string& comm);
  // Drops pids not looked up since the previous Prune; the next interval
  // begins.
  void Prune();
  size_t size() const { return names_.size(); }
  // Distinct names given out since the last Prune (at most the bound).
  size_t services() const { return admitted_.size(); }
  // Processes whose samples went to kOverflow (each once per interval).
  uint64_t overflowed() const { return overflowed_; }

 private:
  struct Entry {
    std::string name;
    bool seen = true;
    uint64_t interval = 0;  // the last interval its name was admitted in
    bool overflow = false;  // ... or refused in
  };
  bool Admit(const std::string& name);
  std::string KeyOf(uint32_t pid, const std::string& comm) const;

  std::string proc_;
  size_t max_;
  unsigned labels_;
  std::string fixed_;
  absl::flat_hash_map<uint32_t, Entry> names_;
  // Names with a place: whether one of their pids had samples this interval.
  absl::flat_hash_map<std::string, bool> admitted_;
  uint64_t interval_ = 1;
  uint64_t overflowed_ = 0;
  const std::string overflow_ = kOverflow;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_SERVICE_NAME_H_
