// Filters every event source applies in BPF: -C (CPU), --comm, --cgroup
// (cgroup v2, with the cgroups below), --include-idle.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>

#include "agent/sampling/cgroup_filter.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::TestdataPath;

class RecordFilters : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!RequireRootForBpf()) GTEST_SKIP();
    dir_ = ::testing::TempDir() + "/filters." + std::to_string(getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  // perf-script headers: "comm tid [cpu] time: period event:".
  struct Header {
    std::string comm;
    int tid, cpu;
  };
  std::vector<Header> Headers(const std::string& path) {
    std::vector<Header> out;
    std::ifstream in(path);
    std::string line;
    static const std::regex kHeader(R"(^(\S.*?) +(\d+) \[(\d+)\] )");
    std::smatch m;
    while (std::getline(in, line)) {
      if (std::regex_search(line, m, kHeader)) out.push_back({m[1], std::stoi(m[2]), std::stoi(m[3])});
    }
    return out;
  }
  std::string dir_;
};

// The command's process runs ehprof's code until its exec (and blocks
// there until the release): none of that is the command's profile. Its
// off-CPU wait for the release is sure to be recorded if it were kept.
TEST_F(RecordFilters, TheCommandBeforeItsExecIsLeftOut) {
  const std::string out = dir_ + "/pre.txt";
  auto r = RunEhprof({"record", "-q", "-F", "999", "--off-cpu", "--format", "perf-script", "-o", out, "--",
                      TestdataPath("offcpu_sleep"), "0.5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto headers = Headers(out);
  ASSERT_FALSE(headers.empty());
  for (const Header& h : headers) EXPECT_EQ(h.comm, "offcpu_sleep");
}

TEST_F(RecordFilters, CpuFilterKeepsOneCpu) {
  if (sysconf(_SC_NPROCESSORS_ONLN) < 2) GTEST_SKIP() << "one CPU: nothing to leave out";
  const std::string out = dir_ + "/c.txt";
  // Two seconds for 50 samples on one CPU: a guard that the CPU's samples
  // are kept, which must hold when other tests share the CPUs.
  auto r = RunEhprof({"record", "-q", "-F", "499", "-C", "1", "--format", "perf-script", "-o", out, "--",
                      TestdataPath("threads"), "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto headers = Headers(out);
  ASSERT_GT(headers.size(), 50u) << r.err;
  for (const Header& h : headers) ASSERT_EQ(h.cpu, 1) << h.comm << " " << h.tid;
}

TEST_F(RecordFilters, CommFilterKeepsOneProgramOfACommand) {
  const std::string out = dir_ + "/comm.txt";
  const std::string script = TestdataPath("threads") + " 1 & " + TestdataPath("deep_recursion") + " 1 10; wait";
  auto r = RunEhprof({"record", "-q", "-F", "499", "--comm", "deep_recursion", "--format", "perf-script", "-o",
                      out, "--", "/bin/sh", "-c", script});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto headers = Headers(out);
  ASSERT_GT(headers.size(), 50u) << r.err;
  for (const Header& h : headers) ASSERT_EQ(h.comm, "deep_recursion");
}

TEST_F(RecordFilters, CgroupFilterKeepsTheCgroupsProcesses) {
  std::ifstream mounts_in("/proc/self/mounts");
  std::stringstream mounts;
  mounts << mounts_in.rdbuf();
  const std::string mount = Cgroup2Mount(mounts.str());
  ASSERT_FALSE(mount.empty()) << "no cgroup2 mount";
  const std::string name = "ehprof-test-" + std::to_string(getpid());
  const std::string cg = mount + "/" + name;
  ASSERT_EQ(::mkdir(cg.c_str(), 0755), 0) << cg << ": " << std::strerror(errno);
  const pid_t spinner = fork();
  if (spinner == 0) {
    execl(TestdataPath("deep_recursion").c_str(), "deep_recursion", "3", "10", nullptr);
    _exit(127);
  }
  { std::ofstream(cg + "/cgroup.procs") << spinner; }
  const std::string out = dir_ + "/cg.txt";
  // -a, with a second busy program outside the cgroup.
  const pid_t other = fork();
  if (other == 0) {
    execl(TestdataPath("threads").c_str(), "threads", "3", nullptr);
    _exit(127);
  }
  auto r = RunEhprof({"record", "-q", "-a", "-d", "1", "-F", "499", "--cgroup", name, "--format", "perf-script",
                      "-o", out});
  ::kill(spinner, SIGKILL);
  ::kill(other, SIGKILL);
  ::waitpid(spinner, nullptr, 0);
  ::waitpid(other, nullptr, 0);
  ::rmdir(cg.c_str());
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto headers = Headers(out);
  ASSERT_GT(headers.size(), 50u) << r.err;
  for (const Header& h : headers) ASSERT_EQ(h.tid, spinner) << h.comm;
  r = RunEhprof({"record", "-q", "-a", "-d", "0.1", "--cgroup", "no/such/cgroup", "-o", out});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("no/such/cgroup"), std::string::npos) << r.err;
}

TEST_F(RecordFilters, IdleTaskOnlyWhenAskedFor) {
  const std::string out = dir_ + "/idle.txt";
  // The idle task runs only when a CPU has nothing else to do: while other
  // tests (fuzzers, builds) keep every CPU busy there is none to sample, so
  // up to four 2 s recordings look for one.
  size_t idle = 0;
  testing::RunResult r;
  for (int attempt = 0; attempt < 4 && idle == 0; ++attempt) {
    r = RunEhprof({"record", "-q", "-a", "-d", "2", "-F", "499", "-K", "--include-idle", "--format",
                   "perf-script", "-o", out});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const Header& h : Headers(out)) idle += h.tid == 0;
  }
  EXPECT_GT(idle, 0u) << "no sample of the idle task in 4 x 2 s at 499 Hz on every CPU";
  r = RunEhprof({"record", "-q", "-a", "-d", "0.5", "-F", "499", "-K", "--format", "perf-script", "-o", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const Header& h : Headers(out)) ASSERT_NE(h.tid, 0);
}

}  // namespace
}  // namespace ehprof
