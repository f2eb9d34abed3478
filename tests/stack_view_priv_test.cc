// --view runtime on a real interpreter: testdata/python/shapes.py's sorted
// shape (run_sorted calls the C builtin sorted, which calls sort_key back)
// recorded in both views. The full view has native frames (the eval loop,
// list.sort's C code) between Python frames; the runtime view none, and
// keeps the native frames leafward of the innermost Python frame and
// rootward of the outermost. The agent's interval profiles (--output-dir
// pprof files) the same.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/pprof_stacks.h"
#include "tests/server_process.h"
#include "tests/srcline_perf_script.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::SrclineFrame;
using testing::SrclineSample;

// A Python frame's dso is its .py file (a frozen module's "<frozen ...>",
// "[python]" for a stop marker).
bool IsPython(const SrclineFrame& f) {
  return absl::EndsWith(f.dso, ".py") || absl::StartsWith(f.dso, "<") || f.dso == "[python]";
}

struct Counts {
  size_t samples = 0;
  size_t two_python = 0;      // with at least two Python frames
  size_t native_between = 0;  // of those, with a native frame between two of them
  // Walks down to the process's start with sort_key under sorted's C code,
  // and of those with a native frame between it and run_sorted (3.11+ run
  // Python-to-Python calls in one eval loop: only a call through C puts
  // native frames between Python ones; a walk cut short has its Python
  // frames side by side at its end).
  size_t keyed = 0, keyed_native_between = 0;
  size_t native_leafward = 0;  // with a native frame leafward of the innermost Python frame
  size_t rooted = 0;           // ending in _start (or a thread's clone)
};

Counts Count(const std::vector<SrclineSample>& samples) {
  Counts c;
  for (const SrclineSample& s : samples) {
    ++c.samples;
    int first = -1, last = -1, python = 0;
    bool keyed = false;
    for (int i = 0; i < static_cast<int>(s.frames.size()); ++i) {
      if (!IsPython(s.frames[i])) continue;
      keyed = keyed || s.frames[i].symbol == "sort_key";
      if (first < 0) first = i;
      last = i;
      ++python;
    }
    if (first > 0) ++c.native_leafward;
    bool rooted = false;
    if (!s.frames.empty()) {
      const std::string& root = s.frames.back().symbol;
      rooted = root == "_start" || root == "clone3" || root == "clone";
    }
    c.rooted += rooted;
    if (python < 2) continue;
    ++c.two_python;
    const bool between = last - first + 1 > python;
    c.native_between += between;
    c.keyed += keyed && rooted;
    c.keyed_native_between += keyed && rooted && between;
  }
  return c;
}

class StackViewPython : public ::testing::TestWithParam<std::string> {
 protected:
  std::vector<SrclineSample> Record(const std::string& view) {
    const std::string out = absl::StrCat(::testing::TempDir(), "/view.", getpid(), ".", view, ".txt");
    const std::string cmd = absl::StrCat(
        "timeout 120 ", testing::EhprofBinary(), " record -F 499 -q --srcline --view ", view, " -o ", out, " -- ",
        GetParam(), " ", testing::SourcePath("testdata/python/shapes.py"), " sorted 2 2>/dev/null");
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::vector<SrclineSample> samples = testing::ParseSrclinePerfScript(testing::ReadFile(out));
    std::remove(out.c_str());
    return samples;
  }
};

TEST_P(StackViewPython, RuntimeViewHasNoNativeFrameBetweenPythonFrames) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  if (access(GetParam().c_str(), X_OK) != 0) GTEST_SKIP() << GetParam() << " is not installed";
  const Counts full = Count(Record("full"));
  const Counts runtime = Count(Record("runtime"));
  ASSERT_GE(full.keyed, 30u) << "too few samples in sort_key to judge";
  ASSERT_GE(runtime.keyed, 30u) << "too few samples in sort_key to judge";
  // sort_key's samples have sorted's C code between it and run_sorted.
  EXPECT_GE(full.keyed_native_between * 100, full.keyed * 95) << full.keyed_native_between << " of " << full.keyed;
  EXPECT_EQ(runtime.native_between, 0u) << "of " << runtime.two_python << " samples with two Python frames";
  // What stays: the C code the innermost function runs (sorted's, the
  // interpreter's own), and the process's start under the outermost.
  EXPECT_GE(runtime.native_leafward * 100, runtime.samples * 50) << runtime.native_leafward << " of "
                                                                 << runtime.samples;
  EXPECT_GE(runtime.rooted * 100, runtime.samples * 95) << runtime.rooted << " of " << runtime.samples;
  EXPECT_GE(full.rooted * 100, full.samples * 95) << full.rooted << " of " << full.samples;
}

// The agent's intervals in the given view, as Counts (pprof frames: a
// Python frame's file is its .py).
Counts AgentCounts(const std::string& python, const std::string& view) {
  const std::string dir = absl::StrCat(::testing::TempDir(), "/agent_view.", getpid(), ".", view);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const pid_t py = testing::SpawnProgram({python, testing::SourcePath("testdata/python/shapes.py"), "sorted", "30"});
  EXPECT_GT(py, 0);
  usleep(300000);  // its runtime initialized
  const testing::RunResult r = testing::RunEhprof({"agent", "-p", std::to_string(py), "-F", "199", "--interval", "1",
                                                   "--view", view, "--output-dir", dir},
                                                  SIGTERM, 4000);
  kill(py, SIGKILL);
  waitpid(py, nullptr, 0);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::vector<SrclineSample> samples;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const auto p = testing::ReadPprof(e.path());
    EXPECT_TRUE(p.has_value()) << e.path();
    if (!p) continue;
    for (const auto& [count, frames] : testing::PprofStacks(*p)) {
      SrclineSample s;
      for (const testing::PprofFrame& f : frames) s.frames.push_back({f.function, f.file, f.file, 0});
      for (int64_t i = 0; i < count; ++i) samples.push_back(s);
    }
  }
  std::filesystem::remove_all(dir);
  return Count(samples);
}

TEST_P(StackViewPython, AgentIntervalsInTheRuntimeView) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  if (access(GetParam().c_str(), X_OK) != 0) GTEST_SKIP() << GetParam() << " is not installed";
  const Counts full = AgentCounts(GetParam(), "full");
  const Counts runtime = AgentCounts(GetParam(), "runtime");
  ASSERT_GE(full.keyed, 20u) << "too few samples in sort_key to judge";
  ASSERT_GE(runtime.keyed, 20u) << "too few samples in sort_key to judge";
  EXPECT_GE(full.keyed_native_between * 100, full.keyed * 95) << full.keyed_native_between << " of " << full.keyed;
  EXPECT_EQ(runtime.native_between, 0u) << "of " << runtime.two_python << " samples with two Python frames";
}

INSTANTIATE_TEST_SUITE_P(Interpreters, StackViewPython,
                         ::testing::Values("/root/.pyenv/versions/3.12.1/bin/python3.12", testing::DebianPython()),
                         [](const auto& info) { return testing::InterpreterTestName(info.param); });

}  // namespace
}  // namespace ehprof
