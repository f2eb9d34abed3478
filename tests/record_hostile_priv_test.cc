// Processes that make a profiler's life hard: a binary replaced on disk
// while it runs, a zombie, a pid that does not exist.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

// Whether some process's executable is `path` (the file there now: once it
// is replaced, the link reads "path (deleted)").
bool RunningAs(const std::string& path) {
  std::error_code ec;
  for (const auto& d : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = d.path().filename();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code link_ec;
    if (std::filesystem::read_symlink(d.path() / "exe", link_ec) == path) return true;
  }
  return false;
}

using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::RunResult;
using testing::TestdataPath;

TEST(RecordHostile, BinaryReplacedOnDiskKeepsItsOwnTableAndSymbols) {
  if (!RequireRootForBpf()) GTEST_SKIP();
  // The running program is plt_calls; 0.4 s after it has exec'd, another
  // program is renamed over its path. Its stacks must still unwind (the
  // table comes from the mapped inode) and be named from plt_calls, not
  // from the newcomer. The rename waits for the exec: ehprof execs the
  // command only once its BPF programs are loaded, which on a busy machine
  // can take longer than any fixed delay, and a rename before the exec
  // makes the newcomer the program that runs.
  const std::string dir = ::testing::TempDir() + "/hostile." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string prog = dir + "/prog";
  std::filesystem::copy_file(TestdataPath("plt_calls"), prog,
                             std::filesystem::copy_options::overwrite_existing);
  std::filesystem::copy_file(TestdataPath("deep_recursion"), dir + "/other",
                             std::filesystem::copy_options::overwrite_existing);
  const std::string out = dir + "/out.folded";
  std::atomic<bool> renamed_after_exec{false};
  std::thread replace([&] {
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (!RunningAs(prog) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    renamed_after_exec = RunningAs(prog);
    std::this_thread::sleep_for(std::chrono::milliseconds(400));
    std::filesystem::rename(dir + "/other", prog);
  });
  RunResult r = RunEhprof({"record", "-F", "499", "-q", "-o", out, "--", prog, "1.2"});
  replace.join();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(renamed_after_exec) << "no process ran " << prog << " within 60 s";
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
  // Enough samples to judge names by, however busy the machine (499 Hz of
  // a program that runs 1.2 s gives about 600 when it has a CPU to itself).
  ASSERT_GE(total, 100u);
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
