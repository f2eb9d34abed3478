// Processes of an unprivileged user (uid 65534) that ehprof takes for Ruby
// (testdata/hostile_ruby linking libruby-hostile.so, whose exports look
// like libruby's), with control frames and objects that lie and change
// while ehprof reads them: labels claiming 2^40 bytes, iseq bodies and
// envs in unmapped memory, IDs naming nothing, a VM stack of 2^23 VALUEs
// of garbage, frames rewritten at random and the objects' page unmapped
// and mapped again. ehprof record -p ends on time, names a fake's Ruby
// frames only "hostile_ok" (hostile.rb:7, the one frame that reads) or a
// "[ruby: ...]" marker, never walks a stack without end, and reaches the
// fake's own native frames below the VM loop.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/hostile_user.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RunEhprof;
using testing::RunResult;
using testing::TestdataPath;

class HostileRuby : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RequireRootForBpf()) GTEST_SKIP();
    dir_ = "/tmp/hostile_ruby." + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ::chmod(dir_.c_str(), 0755);
    for (const char* f : {"hostile_ruby", "libruby-hostile.so"}) {
      std::filesystem::copy_file(TestdataPath(f), dir_ + "/" + f);
      ASSERT_EQ(::chown((dir_ + "/" + f).c_str(), testing::kNobody, testing::kNobody), 0);
    }
  }
  void TearDown() override {
    for (pid_t p : children_) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  pid_t AsNobody(int variant, int seconds) {
    const std::string prog = dir_ + "/hostile_ruby", v = std::to_string(variant), s = std::to_string(seconds);
    const pid_t pid = fork();
    if (pid == 0) {
      if (!testing::BecomeUser()) _exit(2);
      alarm(90);
      execl(prog.c_str(), prog.c_str(), v.c_str(), s.c_str(), nullptr);
      _exit(127);
    }
    children_.push_back(pid);
    return pid;
  }
  std::string dir_;
  std::vector<pid_t> children_;
};

TEST_F(HostileRuby, RecordPidEndsOnTimeAndNamesNothingWrongly) {
  const pid_t liar = AsNobody(0, 30), endless = AsNobody(1, 30), churn = AsNobody(2, 30);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string perf = dir_ + "/pids.perf";
  const auto start = std::chrono::steady_clock::now();
  RunResult r = RunEhprof({"record", "-p", absl::StrCat(liar, ",", endless, ",", churn), "-F", "199", "-d", "5",
                           "-o", perf});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* bad : {"terminate", "internal error", "Sanitizer", "killed after"}) {
    EXPECT_FALSE(absl::StrContains(r.err, bad)) << bad << "\n" << r.err;
  }
  EXPECT_LT(took, 30.0) << r.err;
  // "\taddr symbol (dso)" per frame; a sample's header has no tab.
  std::ifstream in(perf);
  size_t samples = 0, named = 0, in_vm = 0, complete = 0, frames = 0;
  bool has_ok = false, has_main = false, has_vm = false;
  auto end_sample = [&] {
    named += has_ok;
    in_vm += has_vm;
    complete += has_vm && has_main;
    EXPECT_LT(frames, 300u) << "a stack walked without end";
    has_ok = has_main = has_vm = false;
    frames = 0;
  };
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line[0] != '\t' && line[0] != ' ') {
      if (samples++) end_sample();
      continue;
    }
    ++frames;
    const size_t addr = line.find_first_not_of(" \t"), sym = line.find(' ', addr), dso = line.rfind(" (");
    if (sym == std::string::npos || dso == std::string::npos || dso <= sym) continue;
    const std::string symbol = line.substr(sym + 1, dso - sym - 1), where = line.substr(dso + 2);
    has_main |= symbol == "hostile_main_frame";
    has_vm |= symbol == "vm_exec_core";
    if (absl::StartsWith(where, "hostile.rb") || absl::StartsWith(where, "[ruby]")) {
      const bool allowed = symbol == "hostile_ok" || absl::StartsWith(symbol, "[ruby:");
      EXPECT_TRUE(allowed) << line;
      has_ok |= symbol == "hostile_ok";
    }
  }
  if (samples) end_sample();
  ASSERT_GT(samples, 100u) << r.err;
  EXPECT_GT(named, 20u) << "the fakes were read, not refused at the door";
  // The samples in the fake VM loop (not variant 2's rewriting thread)
  // walk on below it to the fake's main.
  EXPECT_GE(complete * 100, in_vm * 95) << complete << " of " << in_vm << " reach the fake's main frame";
}

}  // namespace
}  // namespace ehprof
