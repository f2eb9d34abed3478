// A CPU must never stall under the profiler: a sample's program runs in the
// timer's interrupt, so each event's stack walks stop once they have used
// their time budget (a share of each CPU's time, bpf/walk.bpf.h), with
// their own stop reason, counted and said. An unprivileged user's deep
// stack is what makes a walk long: with a budget every such walk outlasts
// (the hidden --walk-budget-ns), its walks are cut and said while the root
// agent goes on sampling another process and writes every interval; with
// the budget ehprof sets itself, deep_recursion's 601 frames are walked
// whole. Both walk builds (the tail-call twin: tests/CMakeLists.txt).
#include <grp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "tests/hostile_user.h"

namespace ehprof {
namespace {

namespace fs = std::filesystem;
using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::TestdataPath;

using testing::kNobody;

// "N stack walks cut short by their time budget": N, or 0 without the line.
uint64_t WalksCut(const std::string& err) {
  std::smatch m;
  if (!std::regex_search(err, m, std::regex(R"((\d+) stack walks cut short by their time budget)"))) return 0;
  return std::stoull(m[1].str());
}

class HostileLockup : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RequireRootForBpf()) GTEST_SKIP();
    dir_ = ::testing::TempDir() + "/hostile_lockup." + std::to_string(getpid());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    // The user's own copy of the program, under its own name (its service).
    fs::permissions(dir_, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    fs::copy_file(TestdataPath("deep_recursion"), dir_ + "/deep_hostile");
  }
  void TearDown() override {
    for (pid_t p : children_) {
      kill(p, SIGKILL);
      waitpid(p, nullptr, 0);
    }
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  // prog ARGS, as uid/gid `uid` when not root's.
  pid_t Spawn(uid_t uid, const std::vector<std::string>& args) {
    std::vector<std::string> a = args;
    std::vector<char*> argv;
    for (auto& s : a) argv.push_back(s.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      if (uid != 0 && !testing::BecomeUser(uid)) _exit(126);
      execv(argv[0], argv.data());
      _exit(127);
    }
    if (pid > 0) children_.push_back(pid);
    return pid;
  }

  std::vector<std::string> Intervals() {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir_ + "/out")) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string dir_;
  std::vector<pid_t> children_;
};

TEST_F(HostileLockup, AnUnprivilegedDeepStackOverTheBudgetIsCutAndTheAgentGoesOn) {
  const pid_t hostile = Spawn(kNobody, {dir_ + "/deep_hostile", "10", "1000"});
  const pid_t other = Spawn(0, {TestdataPath("deep_recursion"), "10", "20"});
  ASSERT_GT(hostile, 0);
  ASSERT_GT(other, 0);
  testing::RunResult r = RunEhprof({"agent", "-p", std::to_string(hostile) + "," + std::to_string(other),
                                    "-F", "199", "--interval", "1", "--output-dir", dir_ + "/out",
                                    "--walk-budget-ns", "1", "--no-table-cache"},
                                   SIGTERM, 4600);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // Both processes were walked EHP_BUDGET_EVERY steps at most; the cuts
  // reached the BPF counter and the agent's last words.
  EXPECT_GT(WalksCut(r.err), 0u) << r.err;
  EXPECT_EQ(waitpid(hostile, nullptr, WNOHANG), 0) << "the hostile process was disturbed";
  const std::vector<std::string> files = Intervals();
  ASSERT_GE(files.size(), 3u) << r.err;
  // Every interval (the last is partial) holds samples of the other process.
  for (size_t i = 0; i + 1 < files.size(); ++i) {
    const std::string top =
        testing::GoToolPprof("-top -tagfocus=service_name=deep_recursion", {files[i]}, dir_);
    EXPECT_NE(top.find("recurse_leaf"), std::string::npos) << files[i] << "\n" << top << r.err;
  }
  const std::string top = testing::GoToolPprof("-top -tagfocus=service_name=deep_hostile", files, dir_);
  EXPECT_NE(top.find("recurse_leaf"), std::string::npos) << top;
}

TEST_F(HostileLockup, ATinyBudgetCutsWalksWithTheirOwnStopReason) {
  testing::RunResult r = RunEhprof({"record", "-F", "199", "--walk-budget-ns", "1", "--no-table-cache", "-o",
                                    dir_ + "/cut.folded", "--", dir_ + "/deep_hostile", "1", "600"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(WalksCut(r.err), 0u) << r.err;
  // A 601-frame walk is over the budget at its first look at the clock:
  // the most frequent stop reason.
  EXPECT_TRUE(std::regex_search(r.err, std::regex(R"(stop reasons: time budget spent \d+\.\d%)"))) << r.err;
}

TEST_F(HostileLockup, TheBudgetEhprofSetsWalksSixHundredFramesWhole) {
  testing::RunResult r = RunEhprof(
      {"record", "-F", "99", "--no-table-cache", "-o", dir_ + "/whole.folded", "--", dir_ + "/deep_hostile", "1", "600"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(WalksCut(r.err), 0u) << r.err;
  EXPECT_EQ(r.err.find("time budget spent"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("stop reasons: end of stack"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ehprof
