// A local user against the mapping events: a process that maps code of a
// file ehprof has never met makes the kernel side say so at once
// (EHP_EVENT_NEW_FILE), and user space reads that process's maps while the
// file is still mapped. The attacker maps a file that is no ELF (so it is
// never met: every mapping of it is news) in a loop, from a process with
// thousands of mappings (so each read of its maps is dear), as uid 65534.
// Reads are bounded (one event every 2 ms a process in the kernel, 20
// reads a second a process in user space): ehprof stays cheap and a
// program beside it is still walked whole.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <regex>
#include <string>
#include <thread>

#include "gtest/gtest.h"
#include "tests/hostile_user.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RequireRootForBpf;
using testing::RunEhprof;
using testing::RunResult;
using testing::TestdataPath;

constexpr int kAnonMappings = 6000;

// The attacker, in a forked child as uid 65534: kAnonMappings separate
// mappings, then mmap(PROT_EXEC) and munmap of `file` until killed.
// Exits 3 when the file cannot be mapped executable (a noexec mount: no
// attack to judge).
[[noreturn]] void Attack(const std::string& file) {
  if (!testing::BecomeUser()) _exit(2);
  for (int i = 0; i < kAnonMappings; ++i) {
    // Alternating protections: neighbours never merge into one line.
    void* p = mmap(nullptr, 4096, (i & 1) ? PROT_READ : PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) _exit(4);
  }
  const int fd = open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) _exit(5);
  for (;;) {
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) _exit(3);
    munmap(p, 4096);
  }
}

TEST(HostileMmap, MappingUnknownCodeInALoopCostsBoundedReads) {
  if (!RequireRootForBpf()) GTEST_SKIP();
  const std::string dir = ::testing::TempDir() + "/hostile_mmap." + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  std::filesystem::permissions(dir, std::filesystem::perms::all);
  const std::string file = dir + "/not_elf.bin";
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  for (int i = 0; i < 4096; ++i) std::fputc(0xc3, f);  // ret, over and over
  std::fclose(f);
  std::filesystem::permissions(file, std::filesystem::perms::all);

  const pid_t attacker = fork();
  if (attacker == 0) Attack(file);
  const pid_t victim = fork();
  if (victim == 0) {
    execl(TestdataPath("deep_recursion.stripped").c_str(), "deep_recursion.stripped", "8", nullptr);
    _exit(127);
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its mappings made, the loop going
  const std::string out = dir + "/out.txt";
  RunResult r = RunEhprof({"record", "-p", std::to_string(attacker) + "," + std::to_string(victim), "-F", "499",
                           "-d", "5", "--format", "perf-script", "-o", out});
  int status = 0;
  const bool attacking = waitpid(attacker, &status, WNOHANG) == 0;
  kill(attacker, SIGKILL);
  waitpid(attacker, &status, 0);
  kill(victim, SIGKILL);
  waitpid(victim, nullptr, 0);
  ASSERT_TRUE(attacking) << "the attacker stopped early: exit " << WEXITSTATUS(status);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ended by duration"), std::string::npos) << r.err;

  std::smatch cpu;
  ASSERT_TRUE(std::regex_search(r.err, cpu, std::regex(R"(own CPU time while recording ([0-9.]+)%)"))) << r.err;
  std::printf("ehprof beside the mapping loop: %s%% of a CPU\n", cpu[1].str().c_str());
  EXPECT_LT(std::stod(cpu[1].str()), 15.0) << r.err;

  // The victim's samples still reach _start through main.
  const std::string text = testing::ReadFile(out);
  std::filesystem::remove_all(dir);
  size_t total = 0, complete = 0;
  const auto chains = testing::WeighedChains(
      text, TestdataPath("deep_recursion.stripped"), TestdataPath("deep_recursion"), {"main", "_start"},
      [&](const std::string& header) -> uint64_t {
        return header.find(" " + std::to_string(victim) + " ") != std::string::npos;
      });
  std::string incomplete;
  for (const auto& [chain, n] : chains) {
    total += n;
    if (chain.ends_with(";main;libc.so.6;libc.so.6;_start")) {
      complete += n;
    } else if (n && incomplete.size() < 2000) {
      incomplete += "  " + std::to_string(n) + " x " + chain + "\n";
    }
  }
  ASSERT_GT(total, 1000u) << r.err;
  EXPECT_GE(complete * 100, total * 99) << complete << " of " << total << "\n" << incomplete;
}

}  // namespace
}  // namespace ehprof
