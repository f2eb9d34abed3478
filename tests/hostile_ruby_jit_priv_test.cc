// Ruby processes of an unprivileged user (uid 65534) that run code of
// their own in anonymous executable memory, where YJIT's code would be
// (testdata/ruby/fake_jit.rb, through Fiddle), and exit while ehprof reads
// them: ehprof record -p ends on time and cleanly; a walk that finds no
// call into that code says so with a "[ruby: ...]" marker, one that does
// goes on to the script's own frames; no frame is named but the script's
// and Ruby's own methods.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/hostile_user.h"
#include "tests/srcline_perf_script.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

constexpr char kRuby[] = "/usr/bin/ruby3.1";

class HostileRubyJit : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RequireRootForBpf()) GTEST_SKIP();
    if (access(kRuby, X_OK) != 0) GTEST_SKIP() << "Debian 12's ruby3.1 is not installed";
    dir_ = "/tmp/hostile_ruby_jit." + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ::chmod(dir_.c_str(), 0755);
    std::filesystem::copy_file(testing::SourcePath("testdata/ruby/fake_jit.rb"), dir_ + "/fake_jit.rb");
    ::chmod((dir_ + "/fake_jit.rb").c_str(), 0644);
  }
  void TearDown() override {
    for (pid_t p : children_) {
      ::kill(p, SIGKILL);
      ::waitpid(p, nullptr, 0);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  pid_t AsNobody(const char* shape, int seconds) {
    const pid_t pid = testing::SpawnAsUser(kRuby, {kRuby, dir_ + "/fake_jit.rb", shape, std::to_string(seconds)}, 60);
    if (pid > 0) children_.push_back(pid);
    return pid;
  }
  std::string dir_;
  std::vector<pid_t> children_;
};

TEST_F(HostileRubyJit, FakeJitCodeGetsAStopReasonNotAWrongName) {
  // hidden exits mid-recording (its own thread kills it, 8 s in); called
  // outlives it. Long enough for 20 samples of each on a loaded machine
  // (5 s and a 4 s recording gave 16 in CI once: the rest of the ready
  // time went to the agent's start and to other tests).
  const pid_t hidden = AsNobody("hidden", 8), called = AsNobody("called", 20);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  const std::string out = dir_ + "/fake.txt";
  const auto start = std::chrono::steady_clock::now();
  testing::RunResult r = testing::RunEhprof(
      {"record", "-p", absl::StrCat(hidden, ",", called), "-F", "199", "-d", "7", "--srcline", "-o", out});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const char* bad : {"terminate", "internal error", "Sanitizer", "killed after"}) {
    EXPECT_FALSE(absl::StrContains(r.err, bad)) << bad << "\n" << r.err;
  }
  EXPECT_LT(took, 30.0) << r.err;
  const auto samples = testing::ParseSrclinePerfScript(testing::ReadFile(out));
  size_t spin[2] = {0, 0}, marked = 0, reached = 0;
  for (const testing::SrclineSample& s : samples) {
    bool in_fake = false, marker = false, caller = false;
    for (const testing::SrclineFrame& f : s.frames) {
      if (absl::EndsWith(f.dso, ".rb")) {
        EXPECT_TRUE(f.symbol == "fake_jit_caller" || f.symbol == "<main>" || absl::StartsWith(f.symbol, "block in") ||
                    f.symbol == "fake_code")
            << f.symbol << " (" << f.dso << ")";
      }
      if (f.dso == "[ruby]" && !absl::StartsWith(f.symbol, "[ruby:")) {
        EXPECT_TRUE(f.symbol == "call" || f.symbol == "sleep" || f.symbol == "kill" || f.symbol == "new" ||
                    f.symbol == "initialize")
            << "C method " << f.symbol;
      }
      in_fake |= f.dso == "[anon]";
      marker |= f.symbol == "[ruby: JIT code not entered from the VM]";
      caller |= f.symbol == "fake_jit_caller";
    }
    if (!in_fake) continue;
    const bool is_hidden = s.tid == static_cast<uint32_t>(hidden);  // the spin runs in the main thread
    ++spin[is_hidden];
    if (is_hidden) marked += marker;
    else reached += caller;
  }
  ASSERT_GT(spin[1], 20u) << "samples in the hidden fake's code";
  ASSERT_GT(spin[0], 20u) << "samples in the called fake's code";
  EXPECT_GE(marked * 100, spin[1] * 95) << marked << " of " << spin[1] << " say no call into the code was found";
  EXPECT_GE(reached * 100, spin[0] * 95) << reached << " of " << spin[0] << " reach fake_jit_caller through libffi";
}

}  // namespace
}  // namespace ehprof
