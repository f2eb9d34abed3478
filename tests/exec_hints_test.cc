// Exec hints (agent/record/exec_hints.h): what a command exec'd last time,
// read back for the next recording's prefetch; a missing, foreign or
// malformed file gives no hints, never an error.
#include "agent/record/exec_hints.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace ehprof {
namespace {

class ExecHintsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "/hints." + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string OnlyFile() {
    for (const auto& e : std::filesystem::directory_iterator(dir_)) return e.path();
    return "";
  }
  std::string dir_;
};

TEST_F(ExecHintsTest, RoundTripsPerCommandPrivately) {
  ASSERT_TRUE(WriteExecHints(dir_, "/usr/bin/g++", {"/usr/lib/gcc/cc1plus", "/usr/bin/as"}).ok());
  EXPECT_EQ(ReadExecHints(dir_, "/usr/bin/g++"),
            (std::vector<std::string>{"/usr/bin/as", "/usr/lib/gcc/cc1plus"}));
  EXPECT_TRUE(ReadExecHints(dir_, "/usr/bin/make").empty()) << "another command's hints";
  struct stat st;
  ASSERT_EQ(::stat(OnlyFile().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  // Rewritten whole: the next recording's execs replace the last's.
  ASSERT_TRUE(WriteExecHints(dir_, "/usr/bin/g++", {"/usr/bin/ld"}).ok());
  EXPECT_EQ(ReadExecHints(dir_, "/usr/bin/g++"), (std::vector<std::string>{"/usr/bin/ld"}));
}

TEST_F(ExecHintsTest, BoundedAndOnlyAbsolutePaths) {
  std::set<std::string> many;
  for (int i = 0; i < 200; ++i) many.insert("/bin/p" + std::to_string(i));
  many.insert("relative/path");
  ASSERT_TRUE(WriteExecHints(dir_, "/bin/sh", many).ok());
  auto hints = ReadExecHints(dir_, "/bin/sh");
  EXPECT_EQ(hints.size(), kMaxExecHints);
  for (const std::string& h : hints) EXPECT_EQ(h[0], '/');
}

TEST_F(ExecHintsTest, BadFilesGiveNoHints) {
  ASSERT_TRUE(WriteExecHints(dir_, "/bin/sh", {"/bin/true"}).ok());
  const std::string path = OnlyFile();
  // Readable by others: not trusted (the paths it names get opened).
  ASSERT_EQ(::chmod(path.c_str(), 0644), 0);
  EXPECT_TRUE(ReadExecHints(dir_, "/bin/sh").empty());
  // Not ours in format.
  std::ofstream(path, std::ios::trunc) << "something else\n/bin/true\n";
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  EXPECT_TRUE(ReadExecHints(dir_, "/bin/sh").empty());
  // A symlink in its place is not followed.
  std::filesystem::remove(path);
  std::filesystem::create_symlink("/etc/passwd", path);
  EXPECT_TRUE(ReadExecHints(dir_, "/bin/sh").empty());
  EXPECT_TRUE(ReadExecHints(dir_ + "/missing", "/bin/sh").empty());
}

}  // namespace
}  // namespace ehprof
