// `ehprof agent` for real: a workload profiled continuously, one private
// pprof per interval in --output-dir, read back by the real `go tool
// pprof`; SIGTERM writes the last partial interval; SIGHUP does not stop it.
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

extern char** environ;

namespace ehprof {
namespace {

using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::TestdataPath;


class Agent : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RequireRootForBpf()) GTEST_SKIP();
    dir_ = ::testing::TempDir() + "/agent." + std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    // The workload: deep_recursion at depth 20 for 8 s.
    std::string prog = TestdataPath("deep_recursion");
    std::vector<std::string> args = {prog, "8", "20"};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ASSERT_EQ(posix_spawn(&work_, argv[0], nullptr, nullptr, argv.data(), environ), 0);
  }
  void TearDown() override {
    if (work_ > 0) {
      kill(work_, SIGKILL);
      waitpid(work_, nullptr, 0);
    }
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  std::string Pprof(const std::string& args, const std::vector<std::string>& files) {
    return testing::GoToolPprof(args, files, dir_);
  }
  std::vector<std::string> Files() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_ + "/out")) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }

  std::string dir_;
  pid_t work_ = 0;
};

TEST_F(Agent, WritesOnePrivateProfilePerIntervalAndTheLastOnSigterm) {
  std::string scrape;
  testing::RunResult r = RunEhprof(
      {"agent", "-p", std::to_string(work_), "-F", "199", "--interval", "1", "--output-dir",
       dir_ + "/out", "--metrics-every", "1", "--metrics-addr", "127.0.0.1:0"},
      SIGTERM, 4600, [&](pid_t agent) {
        // SIGHUP reopens logs; it must not end the agent.
        kill(agent, SIGHUP);
        usleep(200000);
        // The Prometheus endpoint, at the port the agent says it took.
        std::smatch m;
        const std::string err = testing::ReadFile(::testing::TempDir() + "/ending_err." + std::to_string(getpid()));
        if (std::regex_search(err, m, std::regex(R"(metrics at (http://\S+/metrics))"))) {
          scrape = testing::ShellOutput("curl -sf " + m[1].str());
        }
      });
  EXPECT_NE(scrape.find("# TYPE ehprof_samples_total counter\nehprof_samples_total "), std::string::npos) << scrape;
  EXPECT_NE(scrape.find("ehprof_resident_memory_bytes "), std::string::npos) << scrape;
  EXPECT_TRUE(std::regex_search(scrape, std::regex(R"(\nehprof_intervals_total [1-9])"))) << scrape;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ehprof agent: samples"), std::string::npos) << r.err;  // self-metrics
  std::vector<std::string> files = Files();
  // 4.6 s, less the start (about 1 s with the Python walk verified on a
  // loaded machine), at 1 s an interval: three or four whole ones and the
  // partial last.
  ASSERT_GE(files.size(), 3u) << r.err;
  EXPECT_LE(files.size(), 5u) << r.err;
  for (const std::string& f : files) {
    struct stat st;
    ASSERT_EQ(stat(f.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0600u) << f;
  }
  // The real consumer: the workload's hot path with its service label.
  const std::string top = Pprof("-top -tagfocus=service_name=deep_recursion", files);
  EXPECT_NE(top.find("recurse_leaf"), std::string::npos) << top;
  EXPECT_NE(top.find("File: deep_recursion"), std::string::npos) << top;
  const std::string traces = Pprof("-traces", {files[1]});
  EXPECT_TRUE(std::regex_search(traces, std::regex(R"(recurse_leaf\n(\s+recurse\n){21}\s+main)")))
      << traces.substr(0, 3000);
  // Each whole interval holds about a second of samples (199 Hz, one busy
  // thread); the sample lines of -raw start with their count.
  for (size_t i = 1; i + 1 < files.size(); ++i) {
    const std::string raw = Pprof("-raw", {files[i]});
    uint64_t count = 0;
    std::regex line(R"(\n\s+(\d+)\s+\d+: [\d ]+\n)");
    for (std::sregex_iterator it(raw.begin(), raw.end(), line), end; it != end; ++it) {
      count += std::stoull((*it)[1].str());
    }
    // At least some (fewer when the CPU is shared), never several intervals merged.
    EXPECT_GE(count, 20u) << files[i] << raw.substr(0, 600);
    EXPECT_LE(count, 260u) << files[i];
  }
}

TEST_F(Agent, RefusesToStartWithoutASinkOrWithABadOne) {
  testing::RunResult r = RunEhprof({"agent", "-p", std::to_string(work_)});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("give a sink"), std::string::npos) << r.err;
  r = RunEhprof({"agent", "--output-dir", "/proc/1/no/such"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("/proc/1/no/such"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace ehprof
