// JIT code: anonymous executable memory without CFI, named by the JIT's
// /tmp/perf-PID.map. The walker steps out of it through rbp (frame-pointer
// fallback for mappings without a table) and continues with the caller's CFI.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

bool CiMustNotSkip() {
  const char* ci = std::getenv("CI");
  return ci && std::string(ci) == "true";
}

TEST(RecordJit, JitFramesAreNamedAndTheWalkContinuesIntoTheCaller) {
  if (geteuid() != 0) {
    if (CiMustNotSkip()) FAIL() << "CI=true but not root: the BPF tests must run";
    std::printf("SKIPPED: needs root (CAP_BPF, CAP_PERFMON)\n");
    GTEST_SKIP();
  }
  const std::string out = ::testing::TempDir() + "/jit." + std::to_string(getpid()) + ".folded";
  const std::string cmd = "timeout 60 " + testing::EhprofBinary() + " record -F 999 -q --folded-annotate -o " + out +
                          " -- " + testing::TestdataPath("jit_sim") + " 1 2>/dev/null";
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  std::ifstream in(out);
  std::string line;
  uint64_t total = 0, jit_leaf = 0, full_chain = 0;
  while (std::getline(in, line)) {
    const size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    const uint64_t n = std::stoull(line.substr(sp + 1));
    const std::string stack = line.substr(0, sp);
    total += n;
    if (stack.rfind(";jit_spin_loop_[j]") == stack.size() - 18) {
      jit_leaf += n;
      // libc's startup frames are named from its debug file when libc6-dbg
      // is installed (__libc_start_main_impl), else from .dynsym.
      if (stack.find(";_start;") != std::string::npos &&
          stack.find(";__libc_start_call_main;main;jit_caller;jit_spin_loop_[j]") !=
              std::string::npos) {
        full_chain += n;
      }
    }
  }
  ASSERT_GE(total, 300u) << "too few samples to judge";
  EXPECT_GE(jit_leaf, total * 8 / 10);
  EXPECT_GE(full_chain, jit_leaf * 95 / 100)
      << "the walk must leave the JIT frame through rbp and reach _start";
}

}  // namespace
}  // namespace ehprof
