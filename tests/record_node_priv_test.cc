// JIT code through to _start: node with --perf-basic-prof
// --interpreted-frames-native-stack on a CPU-bound script. The JS frames
// are named from /tmp/perf-PID.map and walked by frame pointer; below them
// V8's embedded builtins (Builtins_JSEntryTrampoline, Builtins_JSEntry) sit
// in /usr/bin/node, which has a table but no FDE for them: the walk steps
// through them by frame pointer (bpf/fp_fallback.bpf.h) and goes on with
// node's CFI down to _start.
#include <unistd.h>

#include <fstream>
#include <string>

#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RunEhprof;

class RecordNode : public testing::RecordingTest {};

TEST_F(RecordNode, JsStacksRunThroughTheBuiltinsToStart) {
  if (!testing::RequireNode()) GTEST_SKIP();
  const std::string out = dir_ + "/node.folded";
  auto r = RunEhprof({"record", "-F", "499", "-q", "-o", out, "--", "/usr/bin/node",
                      "--perf-basic-prof", "--interpreted-frames-native-stack",
                      // V8 logs beside the perf map: into the test's directory,
                      // not the working directory.
                      "--logfile=" + dir_ + "/v8.log",
                      testing::SourcePath("testdata/nodework.js"), "3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  std::string line;
  size_t total = 0, js = 0, js_to_start = 0, through_entry = 0;
  while (std::getline(in, line)) {
    const size_t sp = line.rfind(' ');
    ASSERT_NE(sp, std::string::npos) << line;
    const size_t n = std::stoull(line.substr(sp + 1));
    const std::string stack = ";" + line.substr(0, sp) + ";";
    total += n;
    bool hot = false;
    // Named from the perf map, or from V8's own memory: TurboFan may
    // inline hotA and hotB into the script's on-stack-replaced top-level
    // code, whose perf map entry is "JS:* nodework.js:1:1", while V8's
    // walk names the inlined function (a fifth of the samples on
    // 2026-12-02).
    for (const char* js_frame : {";JS:*hotA ", ";JS:*hotB ", ";JS:~hotA ", ";JS:~hotB ", ";hotA;", ";hotB;"}) {
      hot = hot || stack.find(js_frame) != std::string::npos;
    }
    if (!hot) continue;
    js += n;
    if (stack.find(";_start;") != std::string::npos) js_to_start += n;
    if (stack.find(";Builtins_JSEntryTrampoline;") != std::string::npos &&
        stack.find(";node::Start(int, char**);") != std::string::npos) {
      through_entry += n;
    }
  }
  ASSERT_GE(js, 200u) << "too few samples in the hot JS functions to judge (" << total
                       << " in all)";
  EXPECT_GE(js * 100, total * 80) << "the hot JS functions";
  EXPECT_GE(js_to_start * 100, js * 95)
      << js_to_start << " of " << js << " JS stacks reach _start";
  EXPECT_GE(through_entry * 100, js * 95) << "through the JS entry builtins into node::Start";
  std::printf("node: %zu samples, %zu in hotA/hotB, %zu (%.1f %%) of those reach _start\n",
              total, js, js_to_start, 100.0 * js_to_start / js);
  testing::PrintFigure("samples", total);
  testing::PrintFigure("js_samples", js);
  testing::PrintFigure("js_to_start", js_to_start);
  testing::PrintFigure("js_to_start_pct", 100.0 * js_to_start / js);
  testing::PrintFigure("through_entry_pct", 100.0 * through_entry / js);
}

}  // namespace
}  // namespace ehprof
