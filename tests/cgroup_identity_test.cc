// Pod UID and container id from the cgroup paths kubelet, containerd,
// CRI-O, Docker and podman make (as /proc/PID/cgroup shows them), and from
// hostile ones: a name a user chose, one over-long or malformed, or lines
// that disagree give no id, never a wrong one.
#include "agent/continuous/cgroup_identity.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "agent/continuous/service_name.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

const std::string kId = "3f4e5d6c7b8a9f0e1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e";
const std::string kUid = "0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d";
const std::string kUnderscored = absl::StrReplaceAll(kUid, {{"-", "_"}});

CgroupIdentity Both() { return {kId, kUid}; }

TEST(CgroupIdentity, SystemdDriverCgroupV2) {
  const std::string slice = absl::StrCat("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod",
                                         kUnderscored, ".slice/");
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat(slice, "cri-containerd-", kId, ".scope\n")), Both());
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat(slice, "crio-", kId, ".scope\n")), Both());
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat(slice, "docker-", kId, ".scope\n")), Both());
  // BestEffort, and Guaranteed pods (no QoS slice).
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod",
                                            kUnderscored, ".slice/cri-containerd-", kId, ".scope")),
            Both());
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/kubepods.slice/kubepods-pod", kUnderscored, ".slice/crio-", kId,
                                            ".scope")),
            Both());
  // The pod's own cgroup (the sandbox's pause process has its own scope):
  // a pod, no container.
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat(slice, "\n")), (CgroupIdentity{"", kUid}));
  // CRI-O's conmon is not the container.
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat(slice, "crio-conmon-", kId, ".scope")), (CgroupIdentity{"", kUid}));
  // A cgroup a container made inside its own: still that container.
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat(slice, "cri-containerd-", kId, ".scope/init.scope")), Both());
}

TEST(CgroupIdentity, CgroupfsDriverCgroupV1) {
  // Every controller's line, as a v1 host shows them; the named systemd
  // hierarchy has the systemd path.
  const std::string path = absl::StrCat("/kubepods/burstable/pod", kUid, "/", kId);
  const std::string text = absl::StrCat("12:pids:", path, "\n11:cpu,cpuacct:", path, "\n10:memory:", path,
                                        "\n1:name=systemd:/system.slice/containerd.service\n");
  EXPECT_EQ(IdentityFromCgroup(text), Both());
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("4:cpu:/kubepods/pod", kUid, "/", kId)), Both());
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("4:cpu:/kubepods/besteffort/pod", kUid, "/", kId)), Both());
  // A hybrid host: the unified line is systemd's tree, the controllers kubelet's.
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/system.slice/containerd.service\n4:cpu:", path)), Both());
  // A static pod's UID (32 hex digits).
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/kubepods/burstable/pod0123456789abcdef0123456789abcdef/", kId)),
            (CgroupIdentity{kId, "0123456789abcdef0123456789abcdef"}));
}

TEST(CgroupIdentity, PodmanAndCgroupNamespaces) {
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/libpod_parent/libpod-", kId, "\n")), (CgroupIdentity{kId, ""}));
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/machine.slice/libpod-", kId, ".scope\n")), (CgroupIdentity{kId, ""}));
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/machine.slice/libpod-conmon-", kId, ".scope\n")), CgroupIdentity{});
  // Seen from inside another pod's cgroup namespace (the agent's own).
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/../../kubepods-besteffort-pod", kUnderscored,
                                            ".slice/cri-containerd-", kId, ".scope")),
            Both());
  EXPECT_EQ(IdentityFromCgroup("0::/system.slice/nginx.service\n"), CgroupIdentity{});
  EXPECT_EQ(IdentityFromCgroup("0::/\n"), CgroupIdentity{});
  EXPECT_EQ(IdentityFromCgroup(""), CgroupIdentity{});
}

TEST(CgroupIdentity, HostileNamesGiveNoId) {
  const std::string slice = absl::StrCat("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod",
                                         kUnderscored, ".slice/");
  // Ids not of the runtimes' form: short, long, upper case, not hex.
  for (const std::string& bad : std::vector<std::string>{kId.substr(0, 12), kId + "00", absl::AsciiStrToUpper(kId),
                                                       kId.substr(0, 63) + "g", kId.substr(0, 63) + "/"}) {
    EXPECT_EQ(IdentityFromCgroup(absl::StrCat(slice, "cri-containerd-", bad, ".scope")).container_id, "") << bad;
    EXPECT_EQ(IdentityFromCgroup(absl::StrCat("4:cpu:/kubepods/pod", kUid, "/", bad)).container_id, "") << bad;
  }
  // Malformed UIDs: wrong separators, lengths, characters.
  for (const std::string& bad : std::vector<std::string>{kUid, kUid.substr(1), kUnderscored + "0", std::string(36, 'z'),
                                                       kUnderscored + "_"}) {
    EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/kubepods.slice/kubepods-pod", bad, ".slice")).pod_uid, "")
        << bad;
  }
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("4:cpu:/kubepods/pod", kUnderscored, "/", kId)).pod_uid, "");
  // A bare id not under a pod's cgroup, or a pod not under kubepods.
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("4:cpu:/system.slice/", kId)), CgroupIdentity{});
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("4:cpu:/system.slice/podman/", kId)), CgroupIdentity{});
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("4:cpu:/kubepods/burstable/pod", kUid.substr(1), "/", kId)),
            CgroupIdentity{});
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("4:cpu:/elsewhere/pod", kUid, "/x")), CgroupIdentity{});
  // A user's delegated subtree, where the user names the cgroups.
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/user.slice/user-1000.slice/user@1000.service/app.slice/"
                                            "kubepods.slice/kubepods-pod", kUnderscored, ".slice/cri-containerd-",
                                            kId, ".scope")),
            CgroupIdentity{});
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/../../user@1000.service/kubepods-pod", kUnderscored,
                                            ".slice/cri-containerd-", kId, ".scope")),
            CgroupIdentity{});
  // Lines that disagree: neither.
  const std::string other = std::string(64, 'a');
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/libpod_parent/libpod-", kId, "\n4:cpu:/libpod_parent/libpod-",
                                            other, "\n")),
            CgroupIdentity{});
  // "." components, over-long paths and files: none.
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::/./libpod_parent/libpod-", kId)), CgroupIdentity{});
  std::string deep = "0::";
  for (int i = 0; i < 100; ++i) deep += "/a";
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat(deep, "/libpod_parent/libpod-", kId)), CgroupIdentity{});
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat(std::string(70000, '\n'), "0::/libpod_parent/libpod-", kId)),
            CgroupIdentity{});
  // A line without a path, or a path that is not absolute.
  EXPECT_EQ(IdentityFromCgroup(absl::StrCat("0::libpod_parent/libpod-", kId)), CgroupIdentity{});
}

TEST(SeriesKey, RoundTripsAndSelectsLabels) {
  const ServiceSeries s{"pod/" + kUid, {{"container.id", kId}, {"k8s.pod.uid", kUid}}};
  const ServiceSeries back = SplitSeriesKey(SeriesKey(s));
  EXPECT_EQ(back.name, s.name);
  EXPECT_EQ(back.labels, s.labels);
  EXPECT_EQ(SeriesKey({"nginx.service", {}}), "nginx.service");
  unsigned bits = 0;
  EXPECT_TRUE(ParseCgroupLabels("container.id,k8s.pod.uid", &bits));
  EXPECT_EQ(bits, kAllCgroupLabels);
  EXPECT_TRUE(ParseCgroupLabels("k8s.pod.uid", &bits));
  EXPECT_EQ(bits, kPodUidLabel);
  EXPECT_TRUE(ParseCgroupLabels("none", &bits));
  EXPECT_EQ(bits, kNoCgroupLabels);
  EXPECT_FALSE(ParseCgroupLabels("container.name", &bits));
}

// A /proc with one process in a pod's container, one in a unit.
class FakeProc {
 public:
  FakeProc() : root_(std::filesystem::temp_directory_path() / absl::StrCat("ehprof-proc-", getpid())) {
    Write(7, absl::StrCat("0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod", kUnderscored,
                          ".slice/cri-containerd-", kId, ".scope\n"));
    Write(8, "0::/system.slice/nginx.service\n");
  }
  ~FakeProc() { std::filesystem::remove_all(root_); }
  std::string root() const { return root_.string(); }

 private:
  void Write(int pid, const std::string& text) {
    std::filesystem::create_directories(root_ / std::to_string(pid));
    std::ofstream(root_ / std::to_string(pid) / "cgroup") << text;
  }
  std::filesystem::path root_;
};

TEST(ServiceNames, PodsAreTheirServiceWithTheChosenLabels) {
  FakeProc proc;
  ServiceNames all(proc.root());
  const ServiceSeries pod = SplitSeriesKey(all.Of(7, "worker"));
  EXPECT_EQ(pod.name, "pod/" + kUid);
  EXPECT_EQ(pod.labels, (std::vector<std::pair<std::string, std::string>>{{"container.id", kId},
                                                                          {"k8s.pod.uid", kUid}}));
  EXPECT_EQ(all.Of(8, "nginx"), "nginx.service");
  ServiceNames pods_only(proc.root(), ServiceNames::kDefaultMaxPerInterval, kPodUidLabel);
  EXPECT_EQ(SplitSeriesKey(pods_only.Of(7, "worker")).labels,
            (std::vector<std::pair<std::string, std::string>>{{"k8s.pod.uid", kUid}}));
  // --service-name: the name is the user's, the labels still the process's.
  ServiceNames named(proc.root(), ServiceNames::kDefaultMaxPerInterval, kContainerIdLabel, "shop");
  EXPECT_EQ(named.Of(7, "worker"), SeriesKey({"shop", {{"container.id", kId}}}));
  EXPECT_EQ(named.Of(8, "nginx"), "shop");
  ServiceNames none(proc.root(), ServiceNames::kDefaultMaxPerInterval, kNoCgroupLabels);
  EXPECT_EQ(none.Of(7, "worker"), "pod/" + kUid);
}

}  // namespace
}  // namespace ehprof
