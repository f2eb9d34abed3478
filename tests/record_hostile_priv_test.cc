// Processes that make a profiler's life hard: a binary replaced on disk
// while it runs, a zombie, a pid that does not exist.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::RunResult;
using testing::TestdataPath;

TEST(RecordHostile, BinaryReplacedOnDiskKeepsItsOwnTableAndSymbols) {
  if (!RequireRootForBpf()) GTEST_SKIP();
  // The running program is plt_calls; 0.4 s in, another program is renamed
  // over its path. Its stacks must still unwind (the table comes from the
  // mapped inode) and be named from plt_calls, not from the newcomer.
  const std::string dir = ::testing::TempDir() + "/hostile." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string prog = dir + "/prog";
  std::filesystem::copy_file(TestdataPath("plt_calls"), prog,
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(TestdataPath("deep_recursion"), dir + "/other",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string out = dir + "/out.folded";
  std::thread replace([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    std::filesystem::rename(dir + "/other", prog);
  });
  RunResult r = RunEhprof({"record", "-F", "499", "-q", "-o", out, "--", prog, "1.2"});
  replace.join();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  std::string line;
  uint64_t total = 0, named = 0, wrong = 0;
  while (std::getline(in, line)) {
    if (line.rfind("prog;", 0) != 0) continue;
    const uint64_t n = std::stoull(line.substr(line.rfind(' ') + 1));
    total += n;
    if (line.find(";plt_outer;plt_inner") != std::string::npos) named += n;
    if (line.find("recurse") != std::string::npos) wrong += n;
  }
  ASSERT_GE(total, 200u);
  EXPECT_EQ(wrong, 0u) << "symbols were read from the file that replaced the binary";
  EXPECT_GE(named, total * 9 / 10);
  std::filesystem::remove_all(dir);
}

TEST(RecordHostile, ZombieAndMissingProcessesAreHandled) {
  if (!RequireRootForBpf()) GTEST_SKIP();
  pid_t child = fork();
  if (child == 0) _exit(0);  // a zombie until reaped below
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const std::string out = ::testing::TempDir() + "/zombie." + std::to_string(getpid()) + ".folded";
  RunResult r = RunEhprof({"record", "-q", "-d", "0.3", "-o", out, "-p", std::to_string(child)});
  EXPECT_EQ(r.exit_code, 0) << r.err;  // nothing to sample, nothing broken
  waitpid(child, nullptr, 0);
  RunResult gone = RunEhprof({"record", "-q", "-d", "0.3", "-o", out, "-p", std::to_string(child)});
  EXPECT_EQ(gone.exit_code, 1);
  EXPECT_NE(gone.err.find(std::to_string(child)), std::string::npos) << gone.err;
}

}  // namespace
}  // namespace ehprof
