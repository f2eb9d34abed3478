// The names the container runtime gave the containers whose processes the
// agent samples, for their profiles (Pyroscope's container_name label,
// OTLP's container.name): a service "container/ID" (service_name.h: the
// id's first 12 hex digits, from the process's cgroup) is named from the
// runtime's own record of its containers (storage_containers.h), whose
// full id starts with ID; two containers sharing those 12 digits get no
// name rather than the wrong one.
//
// Only a root-owned record that no one else can write is read (a rootless
// runtime's storage, its user's own, is not: that user could name anyone's
// container). No path is made from a cgroup name: the record is looked up,
// never opened by id. It is read again only when it changed (its inode,
// size or time), at most once per interval, and an unreadable or broken
// one is said once and leaves containers unnamed.
#ifndef EHPROF_AGENT_CONTINUOUS_CONTAINER_NAMES_H_
#define EHPROF_AGENT_CONTINUOUS_CONTAINER_NAMES_H_

#include <sys/types.h>

#include <string>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"

namespace ehprof {

class ContainerNames {
 public:
  static constexpr char kDefaultStorage[] = "/var/lib/containers/storage";

  // storage: containers/storage's root ("" for none); owner: the uid the
  // record must belong to (root; tests give their own).
  explicit ContainerNames(std::string storage = kDefaultStorage, uid_t owner = 0)
      : path_(storage.empty() ? "" : storage + "/overlay-containers/containers.json"), owner_(owner) {}

  // Re-reads the record if it changed; an error says why it cannot be
  // read (the names stay as they were).
  absl::Status Refresh();
  // The name of the container of a "container/ID" service; "" for other
  // services, unknown and ambiguous ids.
  std::string Of(const std::string& service) const;
  size_t size() const { return names_.size(); }

 private:
  std::string path_;
  uid_t owner_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  off_t size_ = -1;
  long mtime_ns_ = -1;
  // The first 12 hex digits of each id -> its name ("" when two share them).
  absl::flat_hash_map<std::string, std::string> names_;
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_CONTAINER_NAMES_H_
