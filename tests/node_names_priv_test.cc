// JavaScript frames named from V8's heap: node started with no flags at all
// (no perf map), attached with `record -p`. The walk reads each JavaScript
// frame's function from its frame slots (bpf/v8.bpf.h) and user space names
// it from the process's SharedFunctionInfo and Script (agent/v8/), an
// optimized frame expanded into the functions TurboFan inlined at its pc.
// Judged on testdata/nodenames.js, whose every function is known: the busy
// thread's samples carry its hot functions, every frame of that script is
// named after one of its functions with a line of that function (the hot
// loop's own), inlined ones included, and the stacks still reach _start.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
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

// The functions of testdata/nodenames.js and the lines each spans (from
// the line holding its marker to the line before the next function's);
// the module wrapper node runs the file in is "(anonymous)", the whole
// file (0: its line unknown).
struct Span {
  int first = 0, last = 0;
};
std::map<std::string, Span> ScriptFunctions(const std::string& path, int* hot_loop) {
  const std::map<std::string, std::string> markers = {
      {"leafMix", "function leafMix("},         {"callerOfLeaf", "function callerOfLeaf("},
      {"literalMethod", "  literalMethod(n) {"}, {"classMethod", "  classMethod(n) {"},
      {"recurse", "function recurse("},         {"arrowFn", "const arrowFn = "},
      {"selfNamed", "const countDown = function selfNamed("}, {"mainLoop", "function mainLoop("}};
  std::map<std::string, Span> out;
  std::map<int, std::string> starts;
  std::ifstream in(path);
  std::string line;
  int n = 1;
  for (; std::getline(in, line); ++n) {
    for (const auto& [name, marker] : markers) {
      if (absl::StartsWith(line, marker)) starts[n] = name;
    }
    // classMethod's loop, header and body on one line.
    if (absl::StrContains(line, "s = (s * 31 + i + n) % 1000003")) *hot_loop = n;
  }
  for (auto it = starts.begin(); it != starts.end(); ++it) {
    out[it->second] = {it->first, std::next(it) == starts.end() ? n - 1 : std::next(it)->first - 1};
  }
  out["(anonymous)"] = {0, n - 1};
  return out;
}

struct Counts {
  size_t busy = 0, in_script = 0, hot = 0, to_start = 0, leaf = 0, leaf_under_caller = 0;
  size_t inlined = 0;                  // samples with a function of the script TurboFan inlined
  size_t class_leaf = 0, class_loop = 0;  // classMethod the leaf-most script frame; on its loop's line
  size_t class_inlined = 0;            // classMethod an inlined frame
  size_t class_in_main = 0;            // that frame on mainLoop's
};

// Records node (args) for 4 s with `record -p` and counts its main
// thread's samples; every frame of nodenames.js must carry the name of
// one of its functions and a line of that function.
Counts RecordNode(const std::string& dir, std::vector<std::string> args) {
  const std::string script = testing::SourcePath("testdata/nodenames.js");
  int hot_loop = 0;
  const std::map<std::string, Span> functions = ScriptFunctions(script, &hot_loop);
  EXPECT_EQ(functions.size(), 9u) << "the markers of nodenames.js";
  EXPECT_GT(hot_loop, 0) << "classMethod's loop in nodenames.js";
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
    bool has_hot = false, start = false, script_frame = false, leaf = false, caller = false, inlined = false;
    bool in_class = false;
    std::string leaf_most;
    for (const testing::SrclineFrame& f : s.frames) {
      start = start || f.symbol == "_start";
      if (!absl::EndsWith(f.file, "/nodenames.js")) continue;
      auto it = functions.find(f.symbol);
      EXPECT_TRUE(it != functions.end()) << "a frame of nodenames.js named " << f.symbol;
      if (it != functions.end()) {
        EXPECT_TRUE(f.line >= it->second.first && f.line <= it->second.last)
            << f.symbol << " at line " << f.line << ", not in its lines " << it->second.first << "-" << it->second.last;
      }
      if (!script_frame && f.symbol == "classMethod") {
        ++c.class_leaf;
        c.class_loop += f.line == hot_loop;
        c.class_inlined += f.dso == "inlined";
      }
      script_frame = true;
      inlined = inlined || f.dso == "inlined";
      c.class_in_main += in_class && f.symbol == "mainLoop";
      in_class = f.symbol == "classMethod" && f.dso == "inlined";
      has_hot = has_hot || hot.contains(f.symbol);
      caller = caller || (leaf && f.symbol == "callerOfLeaf");
      leaf = leaf || f.symbol == "leafMix";
    }
    c.in_script += script_frame;
    c.hot += has_hot;
    c.to_start += start;
    c.leaf += leaf;
    c.leaf_under_caller += caller;
    c.inlined += inlined;
  }
  std::printf("node %s: %zu main-thread samples, in nodenames.js %.1f %%, in its hot functions %.1f %%, "
              "reach _start %.1f %%, leafMix under callerOfLeaf %zu of %zu, with inlined frames %.1f %%, "
              "classMethod leaf %zu (on its loop's line %zu, inlined %zu), inlined into mainLoop %zu\n",
              args.size() > 3 ? args[1].c_str() : "(no flags)", c.busy, 100.0 * c.in_script / c.busy,
              100.0 * c.hot / c.busy, 100.0 * c.to_start / c.busy, c.leaf_under_caller, c.leaf,
              100.0 * c.inlined / c.busy, c.class_leaf, c.class_loop, c.class_inlined, c.class_in_main);
  return c;
}

class NodeNames : public testing::RecordingTest {};

// node as services run it: TurboFan inlines the hot functions into mainLoop
// (on-stack replaced: its one call loops for the whole run); each inlined
// function still gets a frame of its own, under mainLoop, with the line
// its pc runs (classMethod's loop, on one line), and every sample of the
// main thread carries the script's frames.
TEST_F(NodeNames, JsFramesOfANodeWithoutFlagsAreNamedFromItsHeap) {
  if (!testing::RequireNode()) GTEST_SKIP();
  const Counts c = RecordNode(dir_, {});
  ASSERT_GE(c.busy, 500u) << "too few samples of node's main thread to judge";
  EXPECT_GE(c.in_script * 100, c.busy * 90) << c.in_script << " of " << c.busy << " samples in nodenames.js";
  EXPECT_GE(c.to_start * 100, c.busy * 90) << c.to_start << " of " << c.busy << " reach _start";
  // V8's own profiler gives classMethod's lines 42 % of its ticks
  // (bench/results/node_vs_cpuprof.json, osr_inlining_lines).
  EXPECT_GE(c.class_leaf * 100, c.busy * 20) << c.class_leaf << " of " << c.busy << " samples in classMethod";
  // Inlined once mainLoop is optimized (and before, a frame of its own).
  EXPECT_GE(c.class_inlined * 100, c.class_leaf * 50) << "classMethod inlined, a frame of its own";
  EXPECT_EQ(c.class_in_main, c.class_inlined) << "classMethod inlined into mainLoop";
  EXPECT_GE(c.class_loop * 100, c.class_leaf * 90) << "classMethod's samples on its loop's line";
  EXPECT_GE(c.inlined * 100, c.busy * 50) << c.inlined << " of " << c.busy << " samples with inlined frames";
  testing::PrintFigure("in_script_pct", 100.0 * c.in_script / c.busy);
  testing::PrintFigure("hot_pct", 100.0 * c.hot / c.busy);
  testing::PrintFigure("to_start_pct", 100.0 * c.to_start / c.busy);
  testing::PrintFigure("inlined_pct", 100.0 * c.inlined / c.busy);
  testing::PrintFigure("class_loop_line_pct", 100.0 * c.class_loop / std::max<size_t>(c.class_leaf, 1));
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
