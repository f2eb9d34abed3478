// JavaScript frames named from V8's heap: node started with no flags at all
// (no perf map), attached with `record -p`. The walk reads each JavaScript
// frame's function from its frame slots (bpf/v8.bpf.h) and user space names
// it from the process's SharedFunctionInfo and Script (agent/v8/). Judged on
// testdata/nodenames.js, whose every function is known: the busy thread's
// samples carry its hot functions, every frame of that script is named after
// one of its functions with that function's line, and the stacks still
// reach _start.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/server_process.h"
#include "tests/srcline_perf_script.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

// The functions of testdata/nodenames.js and the line each starts on (the
// line holding its marker); the module wrapper node runs the file in is
// "(anonymous)", its line unknown (0).
std::map<std::string, int> ScriptFunctions(const std::string& path) {
  const std::map<std::string, std::string> markers = {
      {"leafMix", "function leafMix("},         {"callerOfLeaf", "function callerOfLeaf("},
      {"literalMethod", "  literalMethod(n) {"}, {"classMethod", "  classMethod(n) {"},
      {"recurse", "function recurse("},         {"arrowFn", "const arrowFn = "},
      {"selfNamed", "const countDown = function selfNamed("}, {"mainLoop", "function mainLoop("}};
  std::map<std::string, int> out = {{"(anonymous)", 0}};
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    for (const auto& [name, marker] : markers) {
      if (absl::StartsWith(line, marker)) out[name] = n;
    }
  }
  return out;
}

struct Counts {
  size_t busy = 0, in_script = 0, hot = 0, to_start = 0, leaf = 0, leaf_under_caller = 0;
};

// Records node (args) for 4 s with `record -p` and counts its main
// thread's samples; every frame of nodenames.js must carry the name and
// line of one of its functions.
Counts RecordNode(const std::string& dir, std::vector<std::string> args) {
  const std::string script = testing::SourcePath("testdata/nodenames.js");
  const std::map<std::string, int> functions = ScriptFunctions(script);
  EXPECT_EQ(functions.size(), 9u) << "the markers of nodenames.js";
  args.insert(args.begin(), "/usr/bin/node");
  args.insert(args.end(), {script, "10"});
  const pid_t node = testing::SpawnProgram(args);
  EXPECT_GT(node, 0);
  if (node <= 0) return {};
  usleep(500000);  // its hot functions compiled
  const std::string out = dir + "/node.txt";
  const testing::RunResult r = testing::RunEhprof(
      {"record", "-p", std::to_string(node), "-F", "499", "-d", "4", "-q", "--srcline", "-o", out});
  kill(node, SIGKILL);
  waitpid(node, nullptr, 0);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::ifstream in(out);
  std::stringstream text;
  text << in.rdbuf();
  const std::set<std::string> hot = {"leafMix", "callerOfLeaf", "literalMethod", "classMethod", "recurse", "arrowFn"};
  Counts c;
  for (const testing::SrclineSample& s : testing::ParseSrclinePerfScript(text.str())) {
    if (s.tid != static_cast<uint32_t>(node)) continue;
    ++c.busy;
    bool has_hot = false, start = false, script_frame = false, leaf = false, caller = false;
    for (const testing::SrclineFrame& f : s.frames) {
      start = start || f.symbol == "_start";
      if (!absl::EndsWith(f.dso, "/nodenames.js")) continue;
      script_frame = true;
      auto it = functions.find(f.symbol);
      EXPECT_TRUE(it != functions.end()) << "a frame of nodenames.js named " << f.symbol;
      if (it != functions.end()) {
        EXPECT_EQ(f.line, it->second) << f.symbol << "'s line";
      }
      has_hot = has_hot || hot.contains(f.symbol);
      caller = caller || (leaf && f.symbol == "callerOfLeaf");
      leaf = leaf || f.symbol == "leafMix";
    }
    c.in_script += script_frame;
    c.hot += has_hot;
    c.to_start += start;
    c.leaf += leaf;
    c.leaf_under_caller += caller;
  }
  std::printf("node %s: %zu main-thread samples, in nodenames.js %.1f %%, in its hot functions %.1f %%, "
              "reach _start %.1f %%, leafMix under callerOfLeaf %zu of %zu\n",
              args.size() > 3 ? args[1].c_str() : "(no flags)", c.busy, 100.0 * c.in_script / c.busy,
              100.0 * c.hot / c.busy, 100.0 * c.to_start / c.busy, c.leaf_under_caller, c.leaf);
  return c;
}

class NodeNames : public testing::RecordingTest {};

// node as services run it: TurboFan inlines the hot functions into mainLoop
// (their frames are then mainLoop's: inlined functions are not named yet),
// and every sample of the main thread still carries the script's frames.
TEST_F(NodeNames, JsFramesOfANodeWithoutFlagsAreNamedFromItsHeap) {
  if (!testing::RequireNode()) GTEST_SKIP();
  const Counts c = RecordNode(dir_, {});
  ASSERT_GE(c.busy, 500u) << "too few samples of node's main thread to judge";
  EXPECT_GE(c.in_script * 100, c.busy * 90) << c.in_script << " of " << c.busy << " samples in nodenames.js";
  EXPECT_GE(c.to_start * 100, c.busy * 90) << c.to_start << " of " << c.busy << " reach _start";
  testing::PrintFigure("in_script_pct", 100.0 * c.in_script / c.busy);
  testing::PrintFigure("hot_pct", 100.0 * c.hot / c.busy);
  testing::PrintFigure("to_start_pct", 100.0 * c.to_start / c.busy);
}

// Without TurboFan's inlining every hot function keeps a frame of its own:
// each is named, under its caller.
TEST_F(NodeNames, EveryHotFunctionIsNamedWhenNoneIsInlined) {
  if (!testing::RequireNode()) GTEST_SKIP();
  const Counts c = RecordNode(dir_, {"--no-turbo-inlining"});
  ASSERT_GE(c.busy, 500u) << "too few samples of node's main thread to judge";
  ASSERT_GE(c.leaf, 50u) << "too few samples in leafMix to judge";
  EXPECT_GE(c.hot * 100, c.busy * 90) << c.hot << " of " << c.busy << " samples in the hot functions";
  EXPECT_GE(c.to_start * 100, c.busy * 90) << c.to_start << " of " << c.busy << " reach _start";
  EXPECT_GE(c.leaf_under_caller * 100, c.leaf * 95) << "leafMix called by callerOfLeaf";
  testing::PrintFigure("hot_pct_no_inlining", 100.0 * c.hot / c.busy);
}

}  // namespace
}  // namespace ehprof
