// OutputTarget, MakeOwnDirectory and OpenLogFile as the running user (the
// links and pipes of another user are hostile_outputs_priv_test's): a new
// file is made beside the name and renamed over it, never before Commit; a
// link of one's own, a device and standard output are written in place and
// stay what they were; what cannot be written fails at Open.
#include "base/output_target.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::ReadFile;

class OutputTargetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "/ehprof_target_XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // The names in dir_, sorted.
  std::vector<std::string> Names() const {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_)) out.push_back(e.path().filename());
    std::sort(out.begin(), out.end());
    return out;
  }
  std::string dir_;
};

TEST_F(OutputTargetTest, ANewFileAppearsWholeAtCommitWithItsMode) {
  const std::string path = dir_ + "/p.folded";
  std::ofstream(path) << "old profile";
  auto t = OutputTarget::Open(path, 0640);
  ASSERT_TRUE(t.ok()) << t.status();
  t->stream() << "main;hot 3\n";
  EXPECT_EQ(ReadFile(path), "old profile");  // untouched until Commit
  ASSERT_EQ(Names().size(), 2u);          // and the temporary file beside it
  ASSERT_TRUE(t->Commit().ok());
  EXPECT_EQ(ReadFile(path), "main;hot 3\n");
  EXPECT_EQ(Names(), std::vector<std::string>{"p.folded"});
  struct stat st;
  ASSERT_EQ(::lstat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
}

TEST_F(OutputTargetTest, NothingIsLeftWhenItIsNotCommitted) {
  {
    auto t = OutputTarget::Open(dir_ + "/p.svg");
    ASSERT_TRUE(t.ok()) << t.status();
    t->stream() << "<svg";
  }
  EXPECT_TRUE(Names().empty());
}

TEST_F(OutputTargetTest, OnesOwnLinkIsWrittenThroughAndStaysALink) {
  const std::string file = dir_ + "/real.folded", link = dir_ + "/link.folded";
  std::ofstream(file) << "a much longer old profile than the new one";
  ASSERT_EQ(::symlink(file.c_str(), link.c_str()), 0);
  auto t = OutputTarget::Open(link);
  ASSERT_TRUE(t.ok()) << t.status();
  t->stream() << "new 1\n";
  ASSERT_TRUE(t->Commit().ok());
  EXPECT_EQ(ReadFile(file), "new 1\n");  // cut to what was written
  struct stat st;
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_F(OutputTargetTest, ACharacterDeviceIsWrittenInPlace) {
  auto t = OutputTarget::Open("/dev/null");
  ASSERT_TRUE(t.ok()) << t.status();
  t->stream() << "x";
  EXPECT_TRUE(t->Commit().ok());
  struct stat st;
  ASSERT_EQ(::lstat("/dev/null", &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
}

// A write that fails (ENOSPC from /dev/full) is DataLoss: the caller writes
// the profile elsewhere.
TEST_F(OutputTargetTest, AFailedWriteIsDataLoss) {
  auto t = OutputTarget::Open("/dev/full");
  ASSERT_TRUE(t.ok()) << t.status();
  t->stream() << std::string(100000, 'x');
  absl::Status s = t->Commit();
  EXPECT_TRUE(absl::IsDataLoss(s)) << s;
  EXPECT_NE(s.message().find("/dev/full"), std::string::npos) << s;
}

// In a child whose standard output is a file: "-", and a link to
// /proc/self/fd/1 (what /dev/stdout is), both write at fd 1's offset; the
// link is not renamed over.
TEST_F(OutputTargetTest, StandardOutputIsWrittenThroughFdOne) {
  const std::string out = dir_ + "/stdout.txt", link = dir_ + "/stdout-link";
  ASSERT_EQ(::symlink("/proc/self/fd/1", link.c_str()), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ::dup2(fd, 1) < 0 || ::write(1, "head\n", 5) != 5) _exit(10);
    for (const std::string& path : {std::string("-"), link}) {
      auto t = OutputTarget::Open(path);
      if (!t.ok()) _exit(11);
      t->stream() << path << "\n";
      if (!t->Commit().ok()) _exit(12);
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(ReadFile(out), "head\n-\n" + link + "\n");
  struct stat st;
  ASSERT_EQ(::lstat(link.c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST_F(OutputTargetTest, WhatCannotBeWrittenFailsAtOpen) {
  for (const std::string& path : {dir_ + "/no-such-dir/p.folded", dir_, std::string("/proc/no-such/x")}) {
    auto t = OutputTarget::Open(path);
    ASSERT_FALSE(t.ok()) << path;
    EXPECT_NE(t.status().message().find(path), std::string::npos) << t.status();
  }
  EXPECT_TRUE(Names().empty());
}

TEST_F(OutputTargetTest, ADirectoryIsMadePrivateAndAFileIsNotOne) {
  const std::string d = dir_ + "/caps";
  ASSERT_TRUE(MakeOwnDirectory(d, "--save-captures").ok());
  struct stat st;
  ASSERT_EQ(::stat(d.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_TRUE(MakeOwnDirectory(d, "--save-captures").ok());  // again: it is there
  std::ofstream(dir_ + "/file") << "x";
  absl::Status s = MakeOwnDirectory(dir_ + "/file", "--save-captures");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--save-captures " + dir_ + "/file: not a directory"), std::string::npos) << s;
}

TEST_F(OutputTargetTest, ALogIsAPlainFileOfOurOwn) {
  const std::string log = dir_ + "/agent.log";
  auto fd = OpenLogFile(log);
  ASSERT_TRUE(fd.ok()) << fd.status();
  ASSERT_EQ(::write(fd->get(), "a\n", 2), 2);
  fd = OpenLogFile(log);  // reopened: appended to
  ASSERT_TRUE(fd.ok()) << fd.status();
  ASSERT_EQ(::write(fd->get(), "b\n", 2), 2);
  EXPECT_EQ(ReadFile(log), "a\nb\n");
  struct stat st;
  ASSERT_EQ(::stat(log.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0600u);
  // A link (even one's own) and a second hard link are not appended to.
  const std::string victim = dir_ + "/victim";
  std::ofstream(victim) << "keep";
  ASSERT_EQ(::symlink(victim.c_str(), (dir_ + "/sym.log").c_str()), 0);
  ASSERT_EQ(::link(victim.c_str(), (dir_ + "/hard.log").c_str()), 0);
  for (const char* name : {"/sym.log", "/hard.log"}) {
    auto bad = OpenLogFile(dir_ + name);
    EXPECT_FALSE(bad.ok()) << name;
  }
  EXPECT_EQ(ReadFile(victim), "keep");
}

}  // namespace
}  // namespace ehprof
