// Python frames in the walk, judged by the shapes testdata/python/shapes.py
// is known to have: each shape recorded under CPython 3.10-3.13 (pyenv),
// Debian 12's stripped /usr/bin/python3.11 and Debian forky's python3.14
// (in a root of that release: tests/debian_python_root.h), the perf-script
// output read back with its source lines.
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/debian_python_root.h"
#include "tests/srcline_perf_script.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

struct Frame {
  std::string symbol, dso;
  int line = 0;
  // A Python frame's dso is its code's co_filename: a .py file, or a frozen
  // module's "<frozen importlib._bootstrap>"; "[python]" for a stop marker.
  bool python() const {
    return absl::EndsWith(dso, ".py") || absl::StartsWith(dso, "<") || dso == "[python]";
  }
};
struct Sample {
  uint32_t tid = 0;
  std::vector<Frame> frames;  // leaf first
  const Frame* LeafPython() const {
    for (const Frame& f : frames) {
      if (f.python()) return &f;
    }
    return nullptr;
  }
  bool Has(const std::string& symbol) const {
    for (const Frame& f : frames) {
      if (f.symbol == symbol) return true;
    }
    return false;
  }
};

// perf-script with --srcline (tests/srcline_perf_script.h).
std::vector<Sample> ParsePerfScript(const std::string& text) {
  std::vector<Sample> out;
  for (testing::SrclineSample& p : testing::ParseSrclinePerfScript(text)) {
    Sample s;
    s.tid = p.tid;
    for (testing::SrclineFrame& f : p.frames) s.frames.push_back({std::move(f.symbol), std::move(f.dso), f.line});
    out.push_back(std::move(s));
  }
  return out;
}

// The line of shapes.py holding `marker`.
int MarkerLine(const std::string& marker) {
  return testing::SourceLineWith("testdata/python/shapes.py", marker);
}

// The parameter naming Debian forky's python3.14, run in its root.
constexpr char kForky314[] = "forky:python3.14";

class PythonFrames : public ::testing::TestWithParam<std::string> {
 protected:
  // The interpreter and shapes.py as a command line.
  std::string Command() {
    if (GetParam() != kForky314) {
      return absl::StrCat(GetParam(), " ", testing::SourcePath("testdata/python/shapes.py"));
    }
    const testing::DebianPythonRoot& root = testing::ForkyPython314();
    return absl::StrCat(root.Command(), " ", root.Copy("testdata/python/shapes.py"));
  }
  // Records `shape` for `seconds`; the samples of the interpreter.
  std::string cold_name_;
  std::vector<Sample> Record(const std::string& shape, double seconds = 2) {
    const std::string out =
        absl::StrCat(::testing::TempDir(), "/py.", getpid(), ".", shape, ".txt");
    const std::string cmd = absl::StrCat("timeout 120 ", testing::EhprofBinary(), " record -F 499 -q --srcline -o ",
                                         out, " -- ", Command(), " ", shape, " ", seconds, " 2>/dev/null");
    EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::vector<Sample> samples = ParsePerfScript(testing::ReadFile(out));
    std::remove(out.c_str());
    return samples;
  }
  // Asks that samples running Python code (the eval loop on their stack)
  // carry Python frames, and that they run down to the bottom of the stack.
  // From each thread's first Python frame that reaches the bottom on: the
  // interpreter is found once its runtime is initialized, after its first
  // milliseconds, and a binary new to the table cache (forky's, in a root
  // unpacked afresh) may still have its unwind table built then.
  void ExpectPythonAndComplete(const std::vector<Sample>& samples) {
    size_t in_eval = 0, with_python = 0, complete = 0;
    std::set<uint32_t> started;
    std::map<std::string, int> roots;  // of the others
    for (const Sample& s : samples) {
      if (s.frames.empty()) continue;
      const std::string& root = s.frames.back().symbol;
      const Frame& last = s.frames.back();
      auto [known, added] = clone3_.try_emplace(last.symbol, false);
      if (added) known->second = testing::IsClone3Child(last.dso, last.symbol);
      const bool bottom = root == "_start" || root == "clone3" || root == "clone" || known->second;
      if (s.LeafPython() && bottom) started.insert(s.tid);
      if (!started.count(s.tid) || !InEval(s)) continue;
      ++in_eval;
      if (s.LeafPython()) ++with_python;
      if (bottom) {
        ++complete;
      } else {
        ++roots[root];
      }
    }
    std::string other_roots;
    for (const auto& [root, n] : roots) absl::StrAppend(&other_roots, " ", root, " x", n);
    ASSERT_GE(in_eval, 60u) << "too few samples to judge";
    EXPECT_GE(with_python * 100, in_eval * 97) << with_python << " of " << in_eval;
    EXPECT_GE(complete * 100, in_eval * 95) << complete << " of " << in_eval << " reach _start or clone3; the others end at" << other_roots;
  }
  // Whether the sample runs the eval loop: its exported symbol, or (forky's
  // python3.14) its .cold part, named by address.
  bool InEval(const Sample& s) {
    if (s.Has("_PyEval_EvalFrameDefault")) return true;
    if (GetParam() != kForky314) return false;
    if (cold_name_.empty()) {
      auto name = testing::ForkyPython314().EvalColdName();
      EXPECT_TRUE(name.ok()) << name.status();
      cold_name_ = name.ok() ? *name : "-";
    }
    return s.Has(cold_name_);
  }
  std::map<std::string, bool> clone3_;  // root symbol -> testing::IsClone3Child
  bool Skip() {
    if (!testing::RequireRootForBpf()) return true;
    if (GetParam() == kForky314) {
      const testing::DebianPythonRoot& root = testing::ForkyPython314();
      if (!root.skip.empty()) std::printf("SKIPPED: %s\n", root.skip.c_str());
      return !root.skip.empty() || root.python.empty();
    }
    if (access(GetParam().c_str(), X_OK) != 0) {
      std::printf("SKIPPED: %s is not installed\n", GetParam().c_str());
      return true;
    }
    return false;
  }
  // 3.10 has no co_qualname: its frames are named by co_name.
  std::string Qualified(const std::string& cls, const std::string& fn) {
    return absl::StrContains(GetParam(), "python3.10") ? fn : absl::StrCat(cls, ".", fn);
  }
};

TEST_P(PythonFrames, ClassMethodByQualnameAtItsHotLines) {
  if (Skip()) GTEST_SKIP();
  const auto samples = Record("method");
  ExpectPythonAndComplete(samples);
  const std::string method = Qualified("Shape", "method");
  const int body = MarkerLine("METHOD-LINE");
  size_t leaf = 0, at_loop = 0, at_body = 0;
  for (const Sample& s : samples) {
    const Frame* f = s.LeafPython();
    if (!f || f->symbol != method) continue;
    ++leaf;
    EXPECT_TRUE(absl::EndsWith(f->dso, "shapes.py")) << f->dso;
    // The method's lines: def (a call not started yet), s = 0, for, body,
    // return.
    if (f->line >= body - 3 && f->line <= body + 1) ++at_loop;
    if (f->line == body) ++at_body;
  }
  ASSERT_GE(leaf, 60u);
  EXPECT_EQ(at_loop, leaf) << "every sample of the method is on one of its lines";
  EXPECT_GE(at_body * 2, leaf) << "most on the body line " << body;
}

TEST_P(PythonFrames, RecursionHundredDeep) {
  if (Skip()) GTEST_SKIP();
  const auto samples = Record("recursion");
  ExpectPythonAndComplete(samples);
  size_t deepest = 0, leaf_loop = 0;
  for (const Sample& s : samples) {
    size_t n = 0;
    for (const Frame& f : s.frames) n += f.python() && f.symbol == "recurse";
    deepest = std::max(deepest, n);
    const Frame* leaf = s.LeafPython();
    if (leaf && leaf->symbol == "leaf_loop") {
      ++leaf_loop;
      EXPECT_EQ(n, 101u) << "recurse(100) down to recurse(0)";
    }
  }
  EXPECT_EQ(deepest, 101u);
  EXPECT_GE(leaf_loop, 60u);
}

TEST_P(PythonFrames, TwoThreadsEachItsOwnHotFunction) {
  if (Skip()) GTEST_SKIP();
  const auto samples = Record("threads");
  ExpectPythonAndComplete(samples);
  std::map<std::string, std::set<uint32_t>> tids;
  for (const Sample& s : samples) {
    const bool a = s.Has("hot_a"), b = s.Has("hot_b");
    EXPECT_FALSE(a && b) << "one thread's stack holds the other's function";
    const Frame* leaf = s.LeafPython();
    if (leaf && (leaf->symbol == "hot_a" || leaf->symbol == "hot_b")) {
      tids[leaf->symbol].insert(s.tid);
      const int want = MarkerLine(leaf->symbol == "hot_a" ? "A-LINE" : "B-LINE");
      // while, for, body.
      EXPECT_TRUE(leaf->line >= want - 2 && leaf->line <= want) << leaf->symbol << ":" << leaf->line;
    }
  }
  ASSERT_EQ(tids["hot_a"].size(), 1u);
  ASSERT_EQ(tids["hot_b"].size(), 1u);
  EXPECT_NE(*tids["hot_a"].begin(), *tids["hot_b"].begin());
}

TEST_P(PythonFrames, GeneratorBelowItsConsumer) {
  if (Skip()) GTEST_SKIP();
  const auto samples = Record("generator");
  ExpectPythonAndComplete(samples);
  // A sample inside the eval loop's prologue, before it links the
  // generator's frame to its caller's, ends the Python walk there (a stop
  // marker, native frames on): rare, so most, not all.
  size_t gen = 0, ordered = 0;
  for (const Sample& s : samples) {
    const Frame* leaf = s.LeafPython();
    if (!leaf || leaf->symbol != "squares") continue;
    ++gen;
    // Leaf first: squares, then (through next()'s C code) run_generator.
    size_t at_gen = 0, at_run = 0;
    for (size_t i = 0; i < s.frames.size(); ++i) {
      if (s.frames[i].symbol == "squares" && !at_gen) at_gen = i + 1;
      if (s.frames[i].symbol == "run_generator") at_run = i + 1;
    }
    ordered += at_gen < at_run;
  }
  EXPECT_GE(gen, 30u);
  EXPECT_GE(ordered * 100, gen * 95) << ordered << " of " << gen;
}

TEST_P(PythonFrames, SortedKeyPythonThenCThenPython) {
  if (Skip()) GTEST_SKIP();
  const auto samples = Record("sorted");
  ExpectPythonAndComplete(samples);
  const int key_line = MarkerLine("KEY-LINE");
  size_t keyed = 0, ordered = 0, with_c = 0;
  for (const Sample& s : samples) {
    const Frame* leaf = s.LeafPython();
    if (!leaf || leaf->symbol != "sort_key") continue;
    ++keyed;
    // Its body, or its def line: a frame not started yet is on its first line.
    EXPECT_TRUE(leaf->line == key_line || leaf->line == key_line - 1) << leaf->line;
    // Leaf first: sort_key, the eval loop, list.sort's C code, run_sorted.
    int key = -1, c = -1, run = -1;
    for (int i = 0; i < static_cast<int>(s.frames.size()); ++i) {
      const std::string& name = s.frames[i].symbol;
      if (name == "sort_key" && key < 0) key = i;
      if ((name == "list_sort_impl" || name == "list_sort") && c < 0) c = i;
      if (name == "run_sorted") run = i;
    }
    if (c < 0) continue;  // a stripped python3.11 names list_sort by address only
    ++with_c;
    ordered += key < c && c < run;
  }
  EXPECT_GE(keyed, 30u);
  EXPECT_GE(ordered * 100, with_c * 95) << ordered << " of " << with_c;
}

TEST_P(PythonFrames, NoPythonGivesNativeFramesOnly) {
  if (Skip()) GTEST_SKIP();
  const std::string out = absl::StrCat(::testing::TempDir(), "/py.", getpid(), ".native.txt");
  const std::string cmd = absl::StrCat("timeout 120 ", testing::EhprofBinary(), " record --no-python -F 499 -q -o ",
                                       out, " -- ", Command(), " method 1 2>/dev/null");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const auto samples = ParsePerfScript(testing::ReadFile(out));
  std::remove(out.c_str());
  ASSERT_GE(samples.size(), 50u);
  for (const Sample& s : samples) EXPECT_EQ(s.LeafPython(), nullptr);
}

INSTANTIATE_TEST_SUITE_P(Interpreters, PythonFrames,
                         ::testing::Values("/root/.pyenv/versions/3.10.13/bin/python3.10",
                                           "/root/.pyenv/versions/3.11.7/bin/python3.11",
                                           "/root/.pyenv/versions/3.12.1/bin/python3.12",
                                           "/root/.pyenv/versions/3.13.0/bin/python3.13",
                                           testing::DebianPython(), kForky314),
                         [](const auto& info) {
                           if (info.param == kForky314) return std::string("forky_python3_14");
                           std::string name = info.param.substr(info.param.rfind('/') + 1);
                           if (absl::StartsWith(info.param, "/usr/")) name = "debian_" + name;
                           for (char& c : name) c = isalnum(static_cast<unsigned char>(c)) ? c : '_';
                           return name;
                         });

}  // namespace
}  // namespace ehprof
