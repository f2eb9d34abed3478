// How a recording ends: signals, a killed command, an unwritable output.
// Every case must write the profile collected so far (or say where it is)
// and leave no BPF program behind.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/test_support.h"

extern char** environ;

namespace ehprof {
namespace {

using testing::FoldedSamples;
using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::RunResult;

bool RequireRoot() { return RequireRootForBpf(); }

// The BPF programs a process holds, from its fds' fdinfo ("prog_id:"):
// program fds and link fds both name theirs. Other ehprof runs (ctest -j)
// have their own, so only these ids are checked afterwards.
std::set<int> ProgramIdsOf(pid_t pid) {
  std::set<int> ids;
  const std::string dir = "/proc/" + std::to_string(pid) + "/fdinfo";
  for (const auto& e : std::filesystem::directory_iterator(dir, std::filesystem::directory_options::skip_permission_denied)) {
    std::ifstream in(e.path());
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("prog_id:", 0) == 0) ids.insert(std::stoi(line.substr(8)));
    }
  }
  return ids;
}

bool ProgramExists(int id) {
  return std::system(("bpftool prog show id " + std::to_string(id) + " >/dev/null 2>&1").c_str()) == 0;
}

// The kernel frees a program asynchronously (RCU, a workqueue) after its
// last reference closes: give that up to two seconds before calling it
// left behind.
bool ProgramOutlives(int id) {
  for (int i = 0; i < 20; ++i) {
    if (!ProgramExists(id)) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ProgramExists(id);
}

class RecordEnding : public ::testing::TestWithParam<int> {};

TEST_P(RecordEnding, SignalWritesTheProfileAndReleasesBpf) {
  if (!RequireRoot()) GTEST_SKIP();
  std::set<int> programs;
  const std::string out =
      ::testing::TempDir() + "/ending." + std::to_string(getpid()) + ".folded";
  std::remove(out.c_str());
  RunResult r = RunEhprof({"record", "-F", "499", "-q", "-o", out, "--",
                     testing::TestdataPath("plt_calls.stripped"), "30"},
                    GetParam(), 100, [&](pid_t pid) {
                      // Setup (the verifier, table builds) takes a while on
                      // a loaded machine: wait until the programs are in,
                      // then let it record for a second.
                      for (int i = 0; i < 150 && programs.size() < 4; ++i) {
                        std::this_thread::sleep_for(std::chrono::milliseconds(100));
                        programs = ProgramIdsOf(pid);
                      }
                      std::this_thread::sleep_for(std::chrono::seconds(1));
                    });
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ended by SIG"), std::string::npos) << r.err;
  EXPECT_GE(FoldedSamples(out), 100u) << "the samples of the second before the signal";
  EXPECT_GE(programs.size(), 4u) << "the sampler and three tracepoint programs";
  for (int id : programs) EXPECT_FALSE(ProgramOutlives(id)) << "BPF program " << id << " left behind";
}

INSTANTIATE_TEST_SUITE_P(Signals, RecordEnding, ::testing::Values(SIGINT, SIGTERM, SIGHUP),
                         [](const auto& info) { return std::string(strsignal(info.param)).substr(0, 4) + std::to_string(info.param); });

TEST(RecordEndingCommand, KilledCommandEndsTheRecordingWithItsProfile) {
  if (!RequireRoot()) GTEST_SKIP();
  const std::string out =
      ::testing::TempDir() + "/killed." + std::to_string(getpid()) + ".folded";
  // The shell kills itself after its child burned CPU for a while.
  RunResult r = RunEhprof({"record", "-F", "499", "-q", "-o", out, "--", "sh", "-c",
                     testing::TestdataPath("plt_calls") + " 0.7; kill -9 $$"},
                    0, 0);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ended by command exit"), std::string::npos) << r.err;
  EXPECT_GE(FoldedSamples(out), 100u);
}

TEST(RecordEndingOutput, ProfilesArePrivateUnlessAsked) {
  if (!RequireRoot()) GTEST_SKIP();
  const std::string a = ::testing::TempDir() + "/private." + std::to_string(getpid()) + ".folded";
  const std::string b = ::testing::TempDir() + "/shared." + std::to_string(getpid()) + ".folded";
  ASSERT_EQ(RunEhprof({"record", "-q", "-d", "0.2", "-o", a, "--", "true"}, 0, 0).exit_code, 0);
  ASSERT_EQ(RunEhprof({"record", "-q", "-d", "0.2", "--output-mode", "0644", "-o", b, "--", "true"}, 0, 0)
                .exit_code,
            0);
  struct stat sa, sb;
  ASSERT_EQ(stat(a.c_str(), &sa), 0);
  ASSERT_EQ(stat(b.c_str(), &sb), 0);
  EXPECT_EQ(sa.st_mode & 0777, 0600u);
  EXPECT_EQ(sb.st_mode & 0777, 0644u);
}

// An -o that cannot be written at all fails before sampling
// (hostile_outputs_priv_test); one whose write fails at the end (ENOSPC:
// /dev/full) keeps what was collected.
TEST(RecordEndingOutput, AFailedWriteKeepsTheProfileElsewhere) {
  if (!RequireRoot()) GTEST_SKIP();
  RunResult r = RunEhprof({"record", "-F", "499", "-q", "-o", "/dev/full", "--format", "folded", "--",
                           testing::TestdataPath("plt_calls"), "0.5"},
                          0, 0);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("write failed"), std::string::npos) << r.err;
  const std::string marker = "the profile was written to ";
  const size_t at = r.err.find(marker);
  ASSERT_NE(at, std::string::npos) << r.err;
  const std::string fallback = r.err.substr(at + marker.size(), r.err.find(' ', at + marker.size()) - at - marker.size());
  EXPECT_GE(FoldedSamples(fallback), 50u) << fallback;
  // A name made exclusively (mkstemps: /tmp/ehprof-PID-XXXXXX.folded), not
  // one another user could plant a link at, and private.
  EXPECT_TRUE(std::regex_match(fallback, std::regex("/tmp/ehprof-[0-9]+-[A-Za-z0-9]{6}\\.folded"))) << fallback;
  struct stat st;
  ASSERT_EQ(stat(fallback.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  std::remove(fallback.c_str());
}

}  // namespace
}  // namespace ehprof

namespace ehprof {
namespace {

void ExpectFioUnwindsInOneMegabyte(const std::string& cache, const std::string& out);

TEST(RecordLimits, FullTableMapsDegradePerFileAndSaySo) {
  if (!RequireRoot()) GTEST_SKIP();
  // 1 MB of table memory cannot hold fio's ~40 libraries: the big ones it
  // hardly uses are refused, each named once, and fio's own stacks still
  // unwind (its binary, ld.so, then the libraries most of its closure
  // needs, libc first, are loaded first; from the table cache too, where
  // every table loads at once and the order alone decides).
  // A table cache of its own, empty at the first run and full at the
  // second: the shared one holds other tests' tables and exec hints, whose
  // order CI runs differed in (11 of 1,773 samples to _start in one).
  const std::string base = ::testing::TempDir() + "/limits." + std::to_string(getpid());
  const std::string cache = base + ".cache", out = base + ".folded";
  ASSERT_EQ(mkdir(cache.c_str(), 0700), 0) << cache;
  for (const char* run : {"an empty table cache", "the table cache its first run filled"}) {
    SCOPED_TRACE(run);
    ExpectFioUnwindsInOneMegabyte(cache, out);
  }
  std::filesystem::remove_all(cache);
}

void ExpectFioUnwindsInOneMegabyte(const std::string& cache, const std::string& out) {
  RunResult r = RunEhprof({"record", "-F", "499", "-q", "--table-memory", "1", "--table-cache", cache, "-o", out,
                           "--", "fio", testing::SourcePath("testdata/workloads/fio-cpu.job"), "--runtime=1"},
                          0, 0);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // Said once for the recording, counted in the summary.
  const size_t first = r.err.find("the BPF table maps are full");
  EXPECT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("the BPF table maps are full", first + 1), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(" 0 refused (maps full)"), std::string::npos) << r.err;
  std::ifstream in(out);
  std::string line;
  uint64_t total = 0, to_start = 0;
  while (std::getline(in, line)) {
    const uint64_t n = std::stoull(line.substr(line.rfind(' ') + 1));
    if (line.rfind("fio;", 0) != 0) continue;
    total += n;
    if (line.find("fio;_start;") == 0) to_start += n;
  }
  ASSERT_GE(total, 100u);
  EXPECT_GE(to_start, total * 9 / 10);
}

TEST(RecordLimits, FullProcessMapDegradesPerProcessAndSaysSoOnce) {
  if (!RequireRoot()) GTEST_SKIP();
  // Room for 2 processes while churn_load keeps ~10 alive: the rest stop
  // at the leaf ("process not yet known") until one exits; the recording
  // goes on, says so once and counts them.
  const std::string out =
      ::testing::TempDir() + "/maxprocs." + std::to_string(getpid()) + ".folded";
  RunResult r = RunEhprof({"record", "-F", "499", "-q", "--max-procs", "2", "-o", out, "--",
                           testing::TestdataPath("churn_load"), "200", "1",
                           testing::TestdataPath("churn_child.stripped"),
                           testing::TestdataPath("libdlwork.so"), "20000"},
                          0, 0);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string warning = "cannot add to the BPF process map";
  const size_t first = r.err.find(warning);
  ASSERT_NE(first, std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(warning, first + 1), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("processes found the BPF process map full"), std::string::npos) << r.err;
  EXPECT_GE(testing::FoldedSamples(out), 100u) << r.err;
}

}  // namespace
}  // namespace ehprof
