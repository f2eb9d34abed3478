// --cgroup PATH: the cgroup v2 id and depth the BPF programs compare the
// current task's ancestor at that depth with (bpf_get_current_ancestor_
// cgroup_id), so a cgroup's processes and those of every cgroup below it
// are profiled.
#ifndef EHPROF_AGENT_SAMPLING_CGROUP_FILTER_H_
#define EHPROF_AGENT_SAMPLING_CGROUP_FILTER_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace ehprof {

struct CgroupTarget {
  std::string path;    // absolute, under the cgroup2 mount
  uint64_t id = 0;     // its kernfs id: the directory's inode number
  uint32_t level = 0;  // 0 is the root
};

// Where the cgroup2 hierarchy is mounted (/sys/fs/cgroup, or
// /sys/fs/cgroup/unified on a hybrid system), from `mounts` (the text of
// /proc/self/mounts); empty if none.
std::string Cgroup2Mount(const std::string& mounts);

// PATH is absolute under the cgroup2 mount, or relative to it
// ("system.slice/nginx.service"). NotFound names what does not exist.
absl::StatusOr<CgroupTarget> ResolveCgroup(const std::string& path);

}  // namespace ehprof

#endif  // EHPROF_AGENT_SAMPLING_CGROUP_FILTER_H_
