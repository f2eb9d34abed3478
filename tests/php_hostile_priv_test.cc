// Processes of an unprivileged user (uid 65534) that ehprof takes for PHP:
// testdata/hostile_php maps Debian 12's real php8.2 (so agent/php/ reads
// that binary's own offsets), spins in its execute_ex, and keeps its
// executor globals pointing at frames that lie (functions freed and
// replaced all the time, prev_execute_data loops, a frame its own caller,
// 2^40-byte strings, functions of no type PHP has, unmapped and misaligned
// pointers, 100000 frames, VM stack segments that lie about where the
// frames' stack starts and ends). ehprof record -p keeps running and ends when
// asked, names their PHP frames only from what their memory held or with a
// "[php: ...]" stop marker, and never walks more than 512 PHP frames of a
// sample.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "agent/php/php_binary.h"
#include "gtest/gtest.h"
#include "tests/hostile_user.h"
#include "tests/srcline_perf_script.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

constexpr char kPhp[] = "/usr/bin/php8.2";
constexpr int kVariants = 5;

bool FromTheFake(const std::string& symbol) {
  return absl::StartsWith(symbol, "[php") || absl::StartsWith(symbol, "hostile_") ||
         absl::StartsWith(symbol, "HostileClass::") || absl::StartsWith(symbol, "/hostile/");
}

TEST(PhpHostile, LyingExecutorGlobalsNamedOnlyFromTheirMemory) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  if (access(kPhp, R_OK) != 0) GTEST_SKIP() << kPhp << " is not installed (php8.2-cli)";
  auto elf = ElfFile::Open(kPhp);
  ASSERT_TRUE(elf.ok()) << elf.status();
  auto bin = InspectPhpBinary(*elf, kPhp);
  ASSERT_TRUE(bin.ok() && *bin) << "php8.2 not read";
  // The fake spins at execute_ex's dispatch jump, 0x45 in.
  ASSERT_EQ((*bin)->layout.jit_resume, (*bin)->vm_begin + 0x45);
  std::vector<pid_t> fakes;
  for (int v = 0; v < kVariants; ++v) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (!testing::BecomeUser()) _exit(3);
      const std::string eg = absl::StrFormat("0x%x", (*bin)->executor_globals);
      const std::string ex = absl::StrFormat("0x%x", (*bin)->vm_begin);
      const std::string variant = std::to_string(v);
      const std::string fake = testing::TestdataPath("hostile_php");
      execl(fake.c_str(), "hostile_php", kPhp, eg.c_str(), ex.c_str(), variant.c_str(), "20", nullptr);
      _exit(4);
    }
    fakes.push_back(pid);
  }
  usleep(300000);
  std::vector<std::string> pids;
  for (pid_t p : fakes) pids.push_back(std::to_string(p));
  const std::string out = absl::StrCat(::testing::TempDir(), "/php_hostile.", getpid(), ".txt");
  const auto start = std::chrono::steady_clock::now();
  const std::string cmd = absl::StrCat("timeout 60 ", testing::EhprofBinary(), " record -q -F 499 -d 3 --srcline -p ",
                                       absl::StrJoin(pids, ","), " -o ", out, " 2>/dev/null");
  const int rc = std::system(cmd.c_str());
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (pid_t p : fakes) {
    kill(p, SIGKILL);
    waitpid(p, nullptr, 0);
  }
  ASSERT_EQ(rc, 0) << cmd;
  EXPECT_LT(took, 15.0) << "a 3 s recording took " << took << " s";
  size_t samples = 0, named = 0, markers = 0;
  for (const testing::SrclineSample& s : testing::ParseSrclinePerfScript(testing::ReadFile(out))) {
    ++samples;
    size_t php = 0;
    for (const testing::SrclineFrame& f : s.frames) {
      if (!absl::EndsWith(f.dso, ".php") && f.dso != "[php]") continue;
      ++php;
      EXPECT_TRUE(FromTheFake(f.symbol)) << f.symbol << " (" << f.dso << ")";
      named += absl::StartsWith(f.symbol, "hostile_") || absl::StartsWith(f.symbol, "HostileClass::");
      markers += absl::StartsWith(f.symbol, "[php");
    }
    EXPECT_LE(php, 513u);
  }
  std::remove(out.c_str());
  EXPECT_GE(samples, 200u);
  EXPECT_GT(named, 0u) << "the churned frames were named";
  EXPECT_GT(markers, 0u) << "the lies ended walks with a stop marker";
}

}  // namespace
}  // namespace ehprof
