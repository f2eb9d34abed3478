// A process's Kubernetes pod and container, read from its cgroup path as
// kubelet and the container runtimes name cgroups:
//   systemd driver  /kubepods.slice/kubepods-burstable.slice/
//                   kubepods-burstable-pod<uid, '-' as '_'>.slice/
//                   cri-containerd-<id>.scope | crio-<id>.scope | docker-<id>.scope
//                   (Guaranteed pods: kubepods-pod<uid>.slice directly)
//   cgroupfs driver /kubepods/burstable/pod<uid>/<id>   (Guaranteed: /kubepods/pod<uid>/<id>)
//   podman          /libpod_parent/libpod-<id>, /machine.slice/libpod-<id>.scope
// on cgroup v2 (the "0::" line) and v1 (each controller's line: on a
// hybrid host the unified line names systemd's tree, the controllers
// kubelet's).
//
// A wrong id is worse than none: a dashboard would show one pod's CPU as
// another's. So an id is taken only in full (64 lowercase hex digits, as
// every runtime above makes them; a pod UID as kubelet writes it: a UUID,
// or the 32 hex digits of a static pod), from a component of exactly the
// runtime's form; lines that disagree give none; and nothing under a
// user's delegated subtree (user.slice, user@N.service), whose cgroup
// names that user chooses, counts. ".." components (a process outside the
// reader's cgroup namespace) are passed over: what follows them is the
// real path below the namespaces' common ancestor.
#ifndef EHPROF_AGENT_CONTINUOUS_CGROUP_IDENTITY_H_
#define EHPROF_AGENT_CONTINUOUS_CGROUP_IDENTITY_H_

#include <string>

#include "absl/strings/string_view.h"

namespace ehprof {

struct CgroupIdentity {
  std::string container_id;  // 64 hex digits, or empty
  std::string pod_uid;       // "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx" (or 32 hex), or empty
  bool operator==(const CgroupIdentity&) const = default;
};

// From the text of /proc/PID/cgroup (at most its first 64 KiB is read).
CgroupIdentity IdentityFromCgroup(absl::string_view cgroup_file_text);

}  // namespace ehprof

#endif  // EHPROF_AGENT_CONTINUOUS_CGROUP_IDENTITY_H_
