// Files of a process in another root (a chroot standing in for a container)
// are opened as that process sees them: its symlinks, absolute or relative,
// and ".." never reach the host's files. Root is needed for chroot().
#include <fcntl.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "agent/process/proc_root.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "tests/hostile_user.h"

namespace ehprof {
namespace {

namespace fs = std::filesystem;
using testing::RequireRootForBpf;

void WriteText(const std::string& path, const std::string& text) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << text;
}

std::string ReadFd(const UniqueFd& fd) {
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = ::pread(fd.get(), buf, sizeof(buf), static_cast<off_t>(out.size()))) > 0) {
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// A temp dir holding a host-only secret and a fake root whose symlinks aim
// at it, and a child process chroot()ed into the fake root.
class ProcRoot : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RequireRootForBpf()) GTEST_SKIP();
    base_ = fs::weakly_canonical(::testing::TempDir() + "/proc_root." + std::to_string(getpid()));
    fs::remove_all(base_);
    secret_ = base_ + "/host/secret";
    root_ = base_ + "/root";
    WriteText(secret_, "HOST");
    WriteText(root_ + "/lib/real.so", "REAL");
    // The same absolute path inside the root holds the process's own file:
    // resolving the link in the process's root must find this one.
    WriteText(root_ + secret_, "INSIDE");
    fs::create_directories(root_ + "/lib");
    fs::create_symlink(secret_, root_ + "/lib/abs.so");
    fs::create_symlink(base_ + "/host/not-in-root", root_ + "/lib/abs_host_only.so");
    WriteText(base_ + "/host/not-in-root", "HOST");
    fs::create_symlink("../../../../../../../../.." + secret_, root_ + "/lib/up.so");
    fs::create_symlink("/proc/self/root" + secret_, root_ + "/lib/magic.so");
    ASSERT_EQ(::mkfifo((root_ + "/lib/fifo.so").c_str(), 0600), 0);
    // Sparse: claims more than any real ELF file, holds nothing.
    WriteText(root_ + "/lib/huge.so", "");
    ASSERT_EQ(::truncate((root_ + "/lib/huge.so").c_str(), off_t{9} << 30), 0);
    fs::create_directories(root_ + "/proc");

    int ready[2];
    ASSERT_EQ(::pipe(ready), 0);
    child_ = ::fork();
    ASSERT_GE(child_, 0);
    if (child_ == 0) {
      ::close(ready[0]);
      // Like a container: its own mount namespace with a procfs inside (so
      // that magic links are there to be refused), then its own root.
      if (::unshare(CLONE_NEWNS) != 0 ||
          ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
          ::mount("/proc", (root_ + "/proc").c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0 ||
          ::chroot(root_.c_str()) != 0 || ::chdir("/") != 0) {
        _exit(1);
      }
      (void)!::write(ready[1], "x", 1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char c;
    ASSERT_EQ(::read(ready[0], &c, 1), 1) << "the child could not chroot";
    ::close(ready[0]);
  }
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    if (!base_.empty()) fs::remove_all(base_);
  }

  std::string base_, secret_, root_;
  pid_t child_ = -1;
};

TEST_F(ProcRoot, PlainFileIsOpened) {
  auto fd = OpenInProcessRoot(child_, "/lib/real.so");
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(ReadFd(*fd), "REAL");
}

TEST_F(ProcRoot, AbsoluteSymlinkResolvesInsideTheRoot) {
  // What the old fallback did: the kernel follows the link against ehprof's
  // root, so it reads the host's file. This is the hole being closed.
  std::ifstream naive("/proc/" + std::to_string(child_) + "/root/lib/abs.so");
  std::string naive_text;
  std::getline(naive, naive_text);
  EXPECT_EQ(naive_text, "HOST") << "the test no longer shows the problem it guards against";

  auto fd = OpenInProcessRoot(child_, "/lib/abs.so");
  ASSERT_TRUE(fd.ok()) << fd.status();
  EXPECT_EQ(ReadFd(*fd), "INSIDE");
}

TEST_F(ProcRoot, AbsoluteSymlinkToAHostOnlyFileIsNotFound) {
  auto fd = OpenInProcessRoot(child_, "/lib/abs_host_only.so");
  ASSERT_FALSE(fd.ok()) << "read " << ReadFd(*fd);
  EXPECT_TRUE(absl::IsNotFound(fd.status())) << fd.status();
  const std::string msg(fd.status().message());
  EXPECT_NE(msg.find("pid " + std::to_string(child_)), std::string::npos) << msg;
  EXPECT_NE(msg.find("/lib/abs_host_only.so"), std::string::npos) << msg;
}

TEST_F(ProcRoot, DotDotCannotEscape) {
  // ".." at the root stays at the root, in a path as in a symlink.
  auto direct = OpenInProcessRoot(child_, "/../../../../../../../.." + secret_);
  ASSERT_TRUE(direct.ok()) << direct.status();
  EXPECT_EQ(ReadFd(*direct), "INSIDE");
  auto relative = OpenInProcessRoot(child_, "../../../../../../../.." + secret_);
  ASSERT_TRUE(relative.ok()) << relative.status();
  EXPECT_EQ(ReadFd(*relative), "INSIDE");
  auto link = OpenInProcessRoot(child_, "/lib/up.so");
  ASSERT_TRUE(link.ok()) << link.status();
  EXPECT_EQ(ReadFd(*link), "INSIDE");
  auto host_only = OpenInProcessRoot(child_, "/../../../../../../../.." + base_ + "/host/not-in-root");
  EXPECT_FALSE(host_only.ok());
}

TEST_F(ProcRoot, MagicLinksAreRefused) {
  // /proc/self/root inside the root is a magic link to some root: following
  // it would leave the process's root. (The naive path reads the host's.)
  std::ifstream naive("/proc/" + std::to_string(child_) + "/root/lib/magic.so");
  std::string naive_text;
  std::getline(naive, naive_text);
  EXPECT_EQ(naive_text, "HOST");
  auto fd = OpenInProcessRoot(child_, "/lib/magic.so");
  EXPECT_FALSE(fd.ok()) << "read " << ReadFd(*fd);
  auto direct = OpenInProcessRoot(child_, "/proc/self/root" + secret_);
  ASSERT_FALSE(direct.ok()) << "read " << ReadFd(*direct);
  EXPECT_NE(direct.status().message().find("magic link"), std::string::npos) << direct.status();
  auto by_pid = OpenInProcessRoot(child_, "/proc/1/root" + secret_);
  EXPECT_FALSE(by_pid.ok()) << "read " << ReadFd(*by_pid);
}

TEST_F(ProcRoot, FifoIsRefusedWithoutBlocking) {
  const auto start = std::chrono::steady_clock::now();
  auto fd = OpenInProcessRoot(child_, "/lib/fifo.so");
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(2));
  ASSERT_FALSE(fd.ok());
  EXPECT_NE(fd.status().message().find("not a regular file"), std::string::npos) << fd.status();
}

TEST_F(ProcRoot, AFileClaimingMoreThanAnyElfIsRefused) {
  auto fd = OpenInProcessRoot(child_, "/lib/huge.so");
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().code(), absl::StatusCode::kResourceExhausted) << fd.status();
  EXPECT_NE(fd.status().message().find("/lib/huge.so in its root: not read: 9663676416 bytes, over the"),
            std::string::npos)
      << fd.status();
}

TEST_F(ProcRoot, MissingProcessIsNotFound) {
  pid_t gone = ::fork();
  if (gone == 0) _exit(0);
  ::waitpid(gone, nullptr, 0);
  auto fd = OpenInProcessRoot(gone, "/lib/real.so");
  ASSERT_FALSE(fd.ok());
  EXPECT_TRUE(absl::IsNotFound(fd.status())) << fd.status();
}

TEST_F(ProcRoot, AnotherUsersProcessNeedsSysPtrace) {
  // A child that gives up root (and with it every capability) cannot reach
  // the chrooted root-owned process's root, and is told which capability
  // would let it.
  int out[2];
  ASSERT_EQ(::pipe(out), 0);
  pid_t probe = ::fork();
  ASSERT_GE(probe, 0);
  if (probe == 0) {
    ::close(out[0]);
    if (!testing::BecomeUser()) _exit(2);
    auto fd = OpenInProcessRoot(child_, "/lib/real.so");
    const std::string msg = fd.ok() ? "opened" : std::string(fd.status().message());
    (void)!::write(out[1], msg.data(), msg.size());
    _exit(absl::IsPermissionDenied(fd.status()) ? 0 : 1);
  }
  ::close(out[1]);
  std::string msg;
  char buf[512];
  ssize_t n;
  while ((n = ::read(out[0], buf, sizeof(buf))) > 0) msg.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  ::waitpid(probe, &status, 0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << msg;
  EXPECT_NE(msg.find("CAP_SYS_PTRACE"), std::string::npos) << msg;
  EXPECT_NE(msg.find(std::to_string(child_)), std::string::npos) << msg;
}

}  // namespace
}  // namespace ehprof
