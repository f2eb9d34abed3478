// `ehprof agent` on a Python program: its interval profiles name the
// Python functions as `record` does (qualname, the .py file, the line),
// interleaved with the interpreter's native frames, in every interval (the
// code objects are read again after each one), under a pyenv CPython and
// Debian's stripped python3.11. The pprof files are decoded with the
// classes protoc generates from pprof's profile.proto.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/pprof_stacks.h"
#include "tests/server_process.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

class AgentPython : public ::testing::TestWithParam<std::string> {};

TEST_P(AgentPython, IntervalsNameThePythonFunctionsAtTheirLines) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  if (access(GetParam().c_str(), X_OK) != 0) GTEST_SKIP() << GetParam() << " is not installed";
  const std::string dir = absl::StrCat(::testing::TempDir(), "/agent_py.", getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const pid_t py = testing::SpawnProgram({GetParam(), testing::SourcePath("testdata/python/shapes.py"), "method", "30"});
  ASSERT_GT(py, 0);
  usleep(300000);  // its runtime initialized
  const testing::RunResult r = testing::RunEhprof(
      {"agent", "-p", std::to_string(py), "-F", "199", "--interval", "1", "--output-dir", dir}, SIGTERM, 6000);
  kill(py, SIGKILL);
  waitpid(py, nullptr, 0);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  ASSERT_GE(files.size(), 3u) << r.err;

  const std::string method = absl::StrContains(GetParam(), "python3.10") ? "method" : "Shape.method";
  const int body = testing::SourceLineWith("testdata/python/shapes.py", "METHOD-LINE");
  int64_t in_eval = 0, with_python = 0, leaf_method = 0, at_lines = 0;
  size_t files_with_method = 0;
  bool started = false;  // from the first sample with Python frames on
  for (const std::string& f : files) {
    const auto p = testing::ReadPprof(f);
    ASSERT_TRUE(p.has_value()) << f;
    bool has_method = false;
    for (const auto& [count, frames] : testing::PprofStacks(*p)) {
      const auto eval = std::find_if(frames.begin(), frames.end(), [](const testing::PprofFrame& fr) {
        return fr.function == "_PyEval_EvalFrameDefault";
      });
      const auto leaf = std::find_if(frames.begin(), frames.end(),
                                     [](const testing::PprofFrame& fr) { return absl::EndsWith(fr.file, ".py"); });
      started = started || leaf != frames.end();
      if (eval == frames.end() || !started) continue;
      in_eval += count;
      if (leaf == frames.end()) continue;
      with_python += count;
      // The Python frames run inside the eval loop: leaf-side of its frame.
      EXPECT_LT(leaf - frames.begin(), eval - frames.begin()) << f;
      if (leaf->function != method) continue;
      has_method = true;
      leaf_method += count;
      EXPECT_TRUE(absl::EndsWith(leaf->file, "shapes.py")) << leaf->file;
      // def, s = 0, for, body, return.
      if (leaf->line >= body - 3 && leaf->line <= body + 1) at_lines += count;
    }
    files_with_method += has_method;
  }
  ASSERT_GE(in_eval, 60) << "too few samples in the eval loop to judge\n" << r.err;
  EXPECT_GE(with_python * 100, in_eval * 95) << with_python << " of " << in_eval;
  EXPECT_GE(leaf_method * 100, with_python * 90) << leaf_method << " of " << with_python;
  EXPECT_EQ(at_lines, leaf_method) << "every sample of the method is on one of its lines";
  // Each interval names them again (the code table is emptied between
  // intervals): all but possibly the partial first and last.
  EXPECT_GE(files_with_method + 2, files.size()) << files_with_method << " of " << files.size();
  std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Interpreters, AgentPython,
                         ::testing::Values("/root/.pyenv/versions/3.12.1/bin/python3.12", testing::DebianPython()),
                         [](const auto& info) { return testing::InterpreterTestName(info.param); });

}  // namespace
}  // namespace ehprof
