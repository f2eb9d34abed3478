// --cgroup's resolution: the cgroup2 mount from /proc/self/mounts (plain or
// hybrid), and paths relative to it or under it.
#include "agent/sampling/cgroup_filter.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "gtest/gtest.h"

namespace ehprof {
namespace {

TEST(CgroupFilter, FindsTheCgroup2MountPlainOrHybrid) {
  EXPECT_EQ(Cgroup2Mount("sysfs /sys sysfs rw 0 0\ncgroup2 /sys/fs/cgroup cgroup2 rw,nosuid 0 0\n"),
            "/sys/fs/cgroup");
  EXPECT_EQ(Cgroup2Mount("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"
                         "cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n"),
            "/sys/fs/cgroup/unified");
  EXPECT_EQ(Cgroup2Mount("cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n"), "");
}

TEST(CgroupFilter, TheRootIsLevelZeroAndItsIdIsItsInode) {
  std::ifstream in("/proc/self/mounts");
  std::stringstream mounts;
  mounts << in.rdbuf();
  const std::string mount = Cgroup2Mount(mounts.str());
  ASSERT_FALSE(mount.empty());
  auto root = ResolveCgroup(mount);
  ASSERT_TRUE(root.ok()) << root.status();
  EXPECT_EQ(root->level, 0u);
  EXPECT_EQ(root->path, mount);
  struct stat st;
  ASSERT_EQ(::stat(mount.c_str(), &st), 0);
  EXPECT_EQ(root->id, st.st_ino);
}

TEST(CgroupFilter, BadPathsAreNamed) {
  auto r = ResolveCgroup("no/such/cgroup");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("no/such/cgroup"), std::string::npos) << r.status();
  r = ResolveCgroup("a/../b");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find(".."), std::string::npos) << r.status();
  r = ResolveCgroup("/etc");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not under"), std::string::npos) << r.status();
}

}  // namespace
}  // namespace ehprof
