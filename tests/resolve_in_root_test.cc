// ResolveInRoot (agent/process/resolve_in_root.h), the step-by-step
// RESOLVE_IN_ROOT for where openat2 is refused, against the kernel's own
// openat2(RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS) on the same tree: the
// same file, or the same error, for links absolute, relative, climbing
// above the root, through directories, in a loop, and magic.
#include "agent/process/resolve_in_root.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

// "dev:ino" of what fd names, or the error.
std::string Named(int fd, int err) {
  struct stat st;
  if (fd < 0 || ::fstat(fd, &st) != 0) return absl::StrCat("error: ", std::strerror(err));
  return absl::StrCat(st.st_dev, ":", st.st_ino);
}

std::string Ours(int root, const std::string& path) {
  UniqueFd fd = ResolveInRoot(root, path);
  return Named(fd.get(), errno);
}

std::string Kernels(int root, const std::string& path) {
  open_how how{};
  how.flags = O_PATH | O_CLOEXEC;  // a final link followed, as ProcessRoot opens
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, root, path.c_str(), &how, sizeof(how))));
  return Named(fd.get(), errno);
}

TEST(ResolveInRoot, ResolvesAsOpenat2InRootDoes) {
  namespace fs = std::filesystem;
  const std::string dir = absl::StrCat(::testing::TempDir(), "/resolve_in_root.", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir + "/etc");
  fs::create_directories(dir + "/lib/sub");
  std::ofstream(dir + "/etc/passwd") << "inner\n";
  std::ofstream(dir + "/lib/real.so") << "so\n";
  fs::create_symlink("/etc/passwd", dir + "/lib/abs");
  fs::create_symlink("../etc/passwd", dir + "/lib/rel");
  fs::create_symlink("../../../../../etc/passwd", dir + "/lib/up");
  fs::create_symlink("/lib", dir + "/lib/sub/dirlink");
  fs::create_symlink("loop", dir + "/lib/loop");
  fs::create_symlink("/proc/self/exe", dir + "/lib/viaproc");
  UniqueFd root(::open(dir.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(root.valid());
  const std::string passwd = Ours(root.get(), "/etc/passwd");
  ASSERT_EQ(passwd.rfind("error", 0), std::string::npos) << passwd;
  for (const std::string path :
       {"/etc/passwd", "etc/passwd", "/lib/abs", "/lib/rel", "/lib/up", "/../../etc/passwd", "/lib/./real.so",
        "/lib/sub/dirlink/real.so", "/lib/sub/dirlink/abs", "/lib/sub/../rel", "/lib/loop", "/etc/passwd/x",
        "/missing", "/lib/missing/x", "/lib/viaproc", "/", "/lib/sub/dirlink"}) {
    EXPECT_EQ(Ours(root.get(), path), Kernels(root.get(), path)) << path;
  }
  // The links that point out of the tree land inside it.
  EXPECT_EQ(Ours(root.get(), "/lib/abs"), passwd);
  EXPECT_EQ(Ours(root.get(), "/lib/up"), passwd);
  // A magic link of the real /proc is refused, as RESOLVE_NO_MAGICLINKS does.
  UniqueFd slash(::open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
  EXPECT_EQ(Ours(slash.get(), "/proc/self/exe"), absl::StrCat("error: ", std::strerror(ELOOP)));
  EXPECT_EQ(Kernels(slash.get(), "/proc/self/exe"), absl::StrCat("error: ", std::strerror(ELOOP)));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ehprof
