// A process that runs no Python when ehprof first looks at it and starts
// Python later (testdata/late_python: native code, then libpython3.11
// dlopen()ed and Python run): the trackers look at a process again when
// its mappings change, not on a clock (agent/process/look_again.h), so the
// interpreter mapped late is found at once and the Python frames of its
// samples are named, whether ehprof started the command or attached to it.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/srcline_perf_script.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

struct Counts {
  size_t samples = 0, in_libpython = 0, named = 0, native_spin = 0;
};

Counts Judge(const std::string& text) {
  Counts c;
  for (const testing::SrclineSample& s : testing::ParseSrclinePerfScript(text)) {
    ++c.samples;
    bool lib = false, hot = false, spin = false;
    for (const testing::SrclineFrame& f : s.frames) {
      lib = lib || absl::StrContains(f.dso, "libpython3.11");
      hot = hot || f.symbol == "late_hot";
      spin = spin || f.symbol == "native_spin";
    }
    c.in_libpython += lib;
    c.named += lib && hot;
    c.native_spin += spin;
  }
  return c;
}

void ExpectNamed(const Counts& c) {
  EXPECT_GE(c.native_spin, 100u) << "the native half";
  ASSERT_GE(c.in_libpython, 100u) << c.samples << " samples";
  // Py_Initialize's own samples (some 20 ms of the second's) have no
  // Python frame to name.
  EXPECT_GE(c.named * 100, c.in_libpython * 90) << c.named << " of " << c.in_libpython
                                                << " samples in libpython name late_hot";
}

bool HaveLibpython() { return access("/usr/lib/x86_64-linux-gnu/libpython3.11.so.1.0", R_OK) == 0; }

TEST(PythonLate, ACommandThatLoadsPythonLaterGetsItsFramesNamed) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP() << "needs root for BPF";
  ASSERT_TRUE(HaveLibpython()) << "libpython3.11 (scripts/packages.sh test)";
  const std::string out = absl::StrCat(::testing::TempDir(), "/late_python.", getpid(), ".txt");
  const std::string cmd = absl::StrCat("timeout 60 ", testing::EhprofBinary(), " record -F 499 -q -o ", out, " -- ",
                                       testing::TestdataPath("late_python"), " 3 2>/dev/null");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const Counts c = Judge(testing::ReadFile(out));
  std::remove(out.c_str());
  ExpectNamed(c);
}

TEST(PythonLate, AProcessAttachedToThatLoadsPythonLaterGetsItsFramesNamed) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP() << "needs root for BPF";
  ASSERT_TRUE(HaveLibpython()) << "libpython3.11 (scripts/packages.sh test)";
  const std::string prog = testing::TestdataPath("late_python");
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    execl(prog.c_str(), prog.c_str(), "6", static_cast<char*>(nullptr));
    _exit(127);
  }
  // Attached while it still runs native code (3 s of it: ehprof's start
  // beside another test took most of 2 s once, leaving no native sample):
  // its first looks find no Python, and nothing exec's or re-reads it on a
  // clock afterwards.
  usleep(300 * 1000);
  const std::string out = absl::StrCat(::testing::TempDir(), "/late_python_p.", getpid(), ".txt");
  const std::string cmd = absl::StrCat("timeout 60 ", testing::EhprofBinary(), " record -F 499 -q -d 5.2 -p ", child,
                                       " -o ", out, " 2>/dev/null");
  const int rc = std::system(cmd.c_str());
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_EQ(rc, 0) << cmd;
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "late_python failed";
  const Counts c = Judge(testing::ReadFile(out));
  std::remove(out.c_str());
  ExpectNamed(c);
}

}  // namespace
}  // namespace ehprof
