// OpenUntrustedFile: what a local user can put at a path ehprof opens (a
// FIFO, a device, a symlink, a directory, a huge sparse file) is refused
// with an error naming it, without blocking; a regular file and the
// kernel's /proc/self/fd links (with kFollow) are opened.
#include "base/untrusted_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

namespace fs = std::filesystem;

class UntrustedFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/untrusted_file.", getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    regular_ = dir_ + "/regular";
    std::ofstream(regular_) << "ELF bytes";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string dir_, regular_;
};

TEST_F(UntrustedFile, OpensARegularFileForReading) {
  absl::StatusOr<UniqueFd> fd = OpenUntrustedFile(regular_, LinkPolicy::kNoFollow);
  ASSERT_TRUE(fd.ok()) << fd.status();
  char buf[16] = {};
  EXPECT_EQ(read(fd->get(), buf, sizeof(buf)), 9);
  EXPECT_EQ(std::string(buf), "ELF bytes");
  // Close-on-exec: a child ehprof starts must not inherit it.
  EXPECT_TRUE(fcntl(fd->get(), F_GETFD) & FD_CLOEXEC);
}

TEST_F(UntrustedFile, AFifoIsRefusedWithoutBlocking) {
  // With no writer, open(2) of a FIFO for reading would block forever.
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (LinkPolicy links : {LinkPolicy::kNoFollow, LinkPolicy::kFollow}) {
    absl::StatusOr<UniqueFd> fd = OpenUntrustedFile(fifo, links);
    ASSERT_FALSE(fd.ok());
    EXPECT_TRUE(absl::IsFailedPrecondition(fd.status())) << fd.status();
    EXPECT_EQ(fd.status().message(), fifo + ": not read: a FIFO, not a regular file");
  }
}

TEST_F(UntrustedFile, ADeviceIsRefusedEvenThroughASymlinkThatIsFollowed) {
  absl::StatusOr<UniqueFd> fd = OpenUntrustedFile("/dev/zero", LinkPolicy::kFollow);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().message(), "/dev/zero: not read: a character device, not a regular file");
  const std::string link = dir_ + "/zero";
  fs::create_symlink("/dev/zero", link);
  fd = OpenUntrustedFile(link, LinkPolicy::kFollow);
  ASSERT_FALSE(fd.ok());
  EXPECT_TRUE(absl::IsFailedPrecondition(fd.status())) << fd.status();
  EXPECT_NE(fd.status().message().find("a character device"), std::string::npos) << fd.status();
}

TEST_F(UntrustedFile, ASymlinkIsRefusedUnlessFollowed) {
  const std::string link = dir_ + "/link";
  fs::create_symlink(regular_, link);
  absl::StatusOr<UniqueFd> fd = OpenUntrustedFile(link, LinkPolicy::kNoFollow);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().message(), link + ": not read: a symbolic link, not a regular file");
  EXPECT_TRUE(OpenUntrustedFile(link, LinkPolicy::kFollow).ok());
}

TEST_F(UntrustedFile, ADirectoryIsRefused) {
  absl::StatusOr<UniqueFd> fd = OpenUntrustedFile(dir_, LinkPolicy::kNoFollow);
  ASSERT_FALSE(fd.ok());
  EXPECT_EQ(fd.status().message(), dir_ + ": not read: a directory, not a regular file");
}

TEST_F(UntrustedFile, AFileOverTheCapIsRefused) {
  // Sparse: it claims 1 GiB and takes no space.
  const std::string big = dir_ + "/big";
  std::ofstream(big).close();
  fs::resize_file(big, uint64_t{1} << 30);
  absl::StatusOr<UniqueFd> fd = OpenUntrustedFile(big, LinkPolicy::kNoFollow, uint64_t{1} << 20);
  ASSERT_FALSE(fd.ok());
  EXPECT_TRUE(absl::IsResourceExhausted(fd.status())) << fd.status();
  EXPECT_NE(fd.status().message().find("1073741824 bytes, over the 1048576"), std::string::npos)
      << fd.status();
  EXPECT_TRUE(OpenUntrustedFile(big, LinkPolicy::kNoFollow).ok());
}

TEST_F(UntrustedFile, AMissingFileSaysSo) {
  absl::StatusOr<UniqueFd> fd = OpenUntrustedFile(dir_ + "/none", LinkPolicy::kNoFollow);
  ASSERT_FALSE(fd.ok());
  EXPECT_TRUE(absl::IsNotFound(fd.status())) << fd.status();
  EXPECT_EQ(fd.status().message(), dir_ + "/none: cannot open: No such file or directory");
}

TEST_F(UntrustedFile, AProcSelfFdLinkIsFollowedOnlyWhenAllowed) {
  // What the agent holds and reads files through: the kernel's link to the
  // very inode, refused as a symlink under kNoFollow (a .gnu_debuglink
  // name looked up in /proc/self/fd must not reach ehprof's own fds).
  absl::StatusOr<UniqueFd> held = OpenUntrustedFile(regular_, LinkPolicy::kNoFollow);
  ASSERT_TRUE(held.ok()) << held.status();
  const std::string link = absl::StrCat("/proc/self/fd/", held->get());
  EXPECT_TRUE(OpenUntrustedFile(link, LinkPolicy::kFollow).ok());
  EXPECT_FALSE(OpenUntrustedFile(link, LinkPolicy::kNoFollow).ok());
  // ehprof's own fd of a pipe: not a regular file, not read even followed.
  int pipe_fds[2];
  ASSERT_EQ(pipe(pipe_fds), 0);
  UniqueFd r(pipe_fds[0]), w(pipe_fds[1]);
  absl::StatusOr<UniqueFd> fd =
      OpenUntrustedFile(absl::StrCat("/proc/self/fd/", r.get()), LinkPolicy::kFollow);
  ASSERT_FALSE(fd.ok());
  EXPECT_NE(fd.status().message().find("a FIFO"), std::string::npos) << fd.status();
}

}  // namespace
}  // namespace ehprof
