// Java and JavaScript frames in the event sources besides CPU sampling, on
// a JVM and a node started with no flag at all and attached to with -p:
// `record --off-cpu` charges the main thread's sleeps to the named method
// or function that sleeps (JvmWaits.sleepHere under JvmWaits.main;
// sleepHere under mainLoop, blocked in Atomics.wait), and a uprobe on
// libc's write gives every write its named caller (writeHere). --no-java
// and --no-js leave the names out. testdata/JvmWaits.java,
// testdata/nodewaits.js.
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/runtime_programs.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RunEhprof;

constexpr char kLibc[] = "/lib/x86_64-linux-gnu/libc.so.6";

// Folded stacks of one command name: root first, without the comm.
using Stacks = std::map<std::vector<std::string>, uint64_t>;

// What a stack set holds under `chain` (names in that order root to leaf,
// not necessarily adjacent), and in all.
struct Share {
  uint64_t under = 0, total = 0;
};
Share Under(const Stacks& stacks, const std::vector<std::string>& chain) {
  Share s;
  for (const auto& [frames, n] : stacks) {
    s.total += n;
    size_t next = 0;
    for (const std::string& f : frames) next += next < chain.size() && f == chain[next];
    if (next == chain.size()) s.under += n;
  }
  return s;
}

std::string Dump(const Stacks& stacks) {
  std::string out;
  for (const auto& [frames, n] : stacks) {
    std::string line;
    for (const std::string& f : frames) line += (line.empty() ? "" : ";") + f;
    out += line + " " + std::to_string(n) + "\n";
    if (out.size() > 4000) break;
  }
  return out;
}

class RuntimeEvents : public testing::RecordingTest {
 protected:
  void TearDown() override {
    testing::KillProgram(&pid_);
    testing::RecordingTest::TearDown();
  }
  // `record -p` the program for a second with `flags`: the folded stacks
  // of its threads named `comm`.
  Stacks Record(const std::vector<std::string>& flags, const std::string& comm) {
    const std::string out = dir_ + "/out.folded";
    std::vector<std::string> args = {"record", "-q", "-p", std::to_string(pid_), "-d", "1", "-o", out};
    args.insert(args.end(), flags.begin(), flags.end());
    const testing::RunResult r = RunEhprof(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    Stacks stacks;
    std::ifstream in(out);
    for (std::string line; std::getline(in, line);) {
      const size_t sp = line.rfind(' ');
      if (sp == std::string::npos) continue;
      std::vector<std::string> frames = absl::StrSplit(line.substr(0, sp), ';');
      if (frames.empty() || frames[0] != comm) continue;
      frames.erase(frames.begin());
      stacks[frames] += std::stoull(line.substr(sp + 1));
    }
    return stacks;
  }
  // The time the main thread (`comm`) sleeps (off the CPU, waiting for an
  // event: not preempted) under `main` over a 1 s recording: nearly all of
  // it in `sleep` (the loop sleeps 20 ms, spins a few and writes a byte).
  void ExpectSleepsNamed(const std::string& comm, const std::string& main, const std::string& sleep) {
    const Stacks off = Record({"--off-cpu", "--off-cpu-state", "sleeping"}, comm);
    const Share in_main = Under(off, {main});
    const Share in_sleep = Under(off, {main, sleep});
    std::printf("%s: off-CPU %.3f s under %s, %.3f s of it under %s\n", comm.c_str(), in_main.under / 1e9,
                main.c_str(), in_sleep.under / 1e9, sleep.c_str());
    EXPECT_GE(in_sleep.under, 400'000'000u) << "of 1 s, the part blocked in " << sleep << "\n" << Dump(off);
    EXPECT_GE(in_sleep.under * 100, in_main.under * 95) << Dump(off);
  }
  // Every write(2) of the main thread through libc's write, from `write`
  // under `main`.
  void ExpectWritesNamed(const std::string& comm, const std::string& main, const std::string& write) {
    const Stacks hits = Record({"-e", std::string("uprobe:") + kLibc + ":write"}, comm);
    const Share named = Under(hits, {main, write});
    std::printf("%s: %llu of %llu write hits under %s;%s\n", comm.c_str(),
                static_cast<unsigned long long>(named.under), static_cast<unsigned long long>(named.total),
                main.c_str(), write.c_str());
    EXPECT_GE(named.under, 15u) << "about 40 writes a second\n" << Dump(hits);
    // A hit before libc's table is loaded (a process attached to has its
    // files' tables loaded while it runs: "table not loaded yet" in 1-10 %
    // of a 1 s recording's hits) stops at the leaf, write alone; every hit
    // walked past it is named.
    uint64_t walked = 0;
    for (const auto& [frames, n] : hits) walked += frames.size() > 1 ? n : 0;
    EXPECT_GE(named.under * 100, walked * 98) << Dump(hits);
  }
  // With the runtime's flag, the main thread's sleeps have no frame named
  // `main`.
  void ExpectNoNameWith(const std::string& flag, const std::string& comm, const std::string& main) {
    const Stacks off = Record({flag, "--off-cpu", "--off-cpu-state", "sleeping"}, comm);
    EXPECT_GE(Under(off, {}).total, 500'000'000u) << Dump(off);
    EXPECT_EQ(Under(off, {main}).under, 0u) << flag << "\n" << Dump(off);
  }
  pid_t pid_ = -1;
};

#if defined(__x86_64__)  // the HotSpot walk is x86-64's (bpf/profiler.bpf.c)
TEST_F(RuntimeEvents, JavaMethodsNameOffCpuTimeAndProbeHits) {
  if (!testing::HaveTestJdk()) GTEST_SKIP() << testing::kTestJdk << " is not installed";
  pid_ = testing::StartJvmWaits(dir_, 20);
  ASSERT_GT(pid_, 0);
  ExpectSleepsNamed("java", "JvmWaits.main", "JvmWaits.sleepHere");
  ExpectWritesNamed("java", "JvmWaits.main", "JvmWaits.writeHere");
  ExpectNoNameWith("--no-java", "java", "JvmWaits.main");
}
#endif

TEST_F(RuntimeEvents, JavaScriptFunctionsNameOffCpuTimeAndProbeHits) {
  if (!testing::RequireNode()) GTEST_SKIP();
  pid_ = testing::StartNodeWaits(20);
  ASSERT_GT(pid_, 0);
  ExpectSleepsNamed("node", "mainLoop", "sleepHere");
  ExpectWritesNamed("node", "mainLoop", "writeHere");
  ExpectNoNameWith("--no-js", "node", "mainLoop");
}

}  // namespace
}  // namespace ehprof
