// What the hostile_outputs tests share: uid 65534 as the attacker, and a
// fixture with a sticky world-writable directory (as /tmp) to plant things
// in and root-owned targets (a file, a directory) that must never change.
#ifndef EHPROF_TESTS_HOSTILE_OUTPUTS_H_
#define EHPROF_TESTS_HOSTILE_OUTPUTS_H_

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "tests/hostile_user.h"

namespace ehprof::hostile {

// What both test files use, in this test-only namespace.
namespace fs = std::filesystem;
using testing::ReadFile;
using testing::RunEhprof;
using testing::RunResult;
using testing::TestdataPath;

using testing::kNobody;
inline constexpr char kPrecious[] = "root's file: must not change\n";

// Runs `attack` in a child as uid/gid 65534; true when it returned true.
inline bool AsNobody(const std::function<bool()>& attack) {
  const pid_t pid = fork();
  if (pid == 0) {
    if (!testing::BecomeUser()) _exit(2);
    _exit(attack() ? 0 : 1);
  }
  int status = 0;
  return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

inline std::vector<std::string> Names(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) out.push_back(e.path().filename());
  std::sort(out.begin(), out.end());
  return out;
}

inline uid_t Owner(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 ? st.st_uid : static_cast<uid_t>(-1);
}

inline bool IsLink(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}

// Polls `done` every 50 ms for up to 30 s: what a test waits for is an
// event, never a guessed delay.
inline bool WaitFor(const std::function<bool()>& done) {
  for (int i = 0; i < 600; ++i) {
    if (done()) return true;
    usleep(50000);
  }
  return done();
}

// What the ehprof that RunEhprof started has written to stderr so far.
inline std::string RunningStderr() {
  return testing::ReadFile(::testing::TempDir() + "/ending_err." + std::to_string(getpid()));
}

// dir_: the test's own (root, 0755) with the planted links' targets:
// precious_ (a root-owned file) and vault_ (a root-owned directory);
// shared_: a sticky world-writable directory, as /tmp.
class HostileOutputs : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RequireRootForBpf()) GTEST_SKIP();
    dir_ = ::testing::TempDir() + "/hostile_outputs." + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ::chmod(dir_.c_str(), 0755);
    precious_ = dir_ + "/precious";
    std::ofstream(precious_) << kPrecious;
    vault_ = dir_ + "/vault";
    std::filesystem::create_directories(vault_);
    shared_ = dir_ + "/shared";
    std::filesystem::create_directories(shared_);
    ::chmod(shared_.c_str(), 01777);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // uid 65534 plants a link at shared_/name to target.
  void Plant(const std::string& name, const std::string& target) {
    ASSERT_TRUE(AsNobody([&] { return ::symlink(target.c_str(), (shared_ + "/" + name).c_str()) == 0; })) << name;
  }
  void ExpectTargetsUnchanged() {
    EXPECT_EQ(testing::ReadFile(precious_), kPrecious);
    EXPECT_TRUE(Names(vault_).empty());
  }
  std::string dir_, precious_, vault_, shared_;
};

}  // namespace ehprof::hostile

#endif  // EHPROF_TESTS_HOSTILE_OUTPUTS_H_
