// Processes of an unprivileged user (uid 65534) that ehprof takes for Perl
// (testdata/hostile_perl linking libperl-hostile.so, whose exports and code
// look like libperl's), with contexts and objects that lie and change while
// ehprof reads them: CVs unmapped or of another type, names claiming 2^30
// bytes, stashes that are no hash, statements whose file is unmapped,
// 5000 contexts of zeros in a stackinfo that is its own si_prev, contexts
// rewritten at random and the objects' page unmapped and mapped again; and
// real perl processes that exit while ehprof names their frames. ehprof
// record ends on time, names a fake's Perl frames only "main::hostile_ok"
// (the one sub that reads), "<main>", "(eval)" or a "[perl: ...]" marker,
// never walks contexts without end, and reaches the fake's own native frames
// below the run loop.
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

class HostilePerl : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RequireRootForBpf()) GTEST_SKIP();
    dir_ = "/tmp/hostile_perl." + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ::chmod(dir_.c_str(), 0755);
    for (const char* f : {"hostile_perl", "libperl-hostile.so"}) {
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
    const std::string prog = dir_ + "/hostile_perl", v = std::to_string(variant), s = std::to_string(seconds);
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

TEST_F(HostilePerl, RecordPidEndsOnTimeAndNamesNothingWrongly) {
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
    has_vm |= symbol == "Perl_runops_standard";
    if (absl::StartsWith(where, "hostile.pl") || absl::StartsWith(where, "[perl]")) {
      const bool allowed = symbol == "main::hostile_ok" || symbol == "<main>" || symbol == "(eval)" ||
                           absl::StartsWith(symbol, "[perl:");
      EXPECT_TRUE(allowed) << line;
      has_ok |= symbol == "main::hostile_ok";
    }
  }
  if (samples) end_sample();
  ASSERT_GT(samples, 100u) << r.err;
  EXPECT_GT(named, 20u) << "the fakes were read, not refused at the door";
  // The samples in the fake run loop (not variant 2's rewriting thread)
  // walk on below it to the fake's main.
  EXPECT_GE(complete * 100, in_vm * 95) << complete << " of " << in_vm << " reach the fake's main frame";
}

// Real perl processes of an unprivileged user, each exiting within a second
// while others start: their frames are named while the process lives, or
// get a marker; never a crash or another sub's name.
TEST_F(HostilePerl, PerlProcessesExitingMidRead) {
  if (access("/usr/bin/perl", X_OK) != 0) GTEST_SKIP() << "Debian 12's perl is not installed";
  const std::string script = dir_ + "/hot.pl", perf = dir_ + "/exits.perf";
  std::filesystem::copy_file(testing::SourcePath("testdata/perl/hot.pl"), script);
  ::chmod(script.c_str(), 0644);
  const std::string loop = absl::StrCat("for i in $(seq 24); do /usr/bin/perl ", script,
                                        " deep 1 & sleep 0.15; done; wait");
  RunResult r = RunEhprof({"record", "-F", "499", "-o", perf, "--", "setpriv", "--reuid=65534", "--regid=65534",
                           "--clear-groups", "sh", "-c", loop});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* bad : {"terminate", "internal error", "Sanitizer", "killed after"}) {
    EXPECT_FALSE(absl::StrContains(r.err, bad)) << bad << "\n" << r.err;
  }
  std::ifstream in(perf);
  size_t deep = 0, markers = 0;
  for (std::string line; std::getline(in, line);) {
    const size_t dso = line.rfind(" ("), addr = line.find_first_not_of(" \t"), sym = line.find(' ', addr);
    if (line.empty() || line[0] != '\t' || dso == std::string::npos || sym >= dso) continue;
    const std::string symbol = line.substr(sym + 1, dso - sym - 1), where = line.substr(dso + 2);
    if (absl::StartsWith(where, script)) {
      const bool allowed = symbol == "main::deep" || symbol == "<main>" || absl::StartsWith(symbol, "main::BEGIN") ||
                           symbol == "(eval)";
      EXPECT_TRUE(allowed) << line;
      deep += symbol == "main::deep";
    }
    markers += absl::StartsWith(symbol, "[perl:");
  }
  EXPECT_GT(deep, 20u) << "the processes were read while they ran; markers " << markers;
}

}  // namespace
}  // namespace ehprof
