// Processes of an unprivileged user (uid 65534) that ehprof takes for a
// HotSpot JVM or for node, with memory that lies and changes while ehprof
// reads it (testdata/hostile_runtime: a hostilejvm/libjvm.so exporting
// gHotSpotVM* tables, a copy named node with v8dbg_* values). Their
// tables without end, strings without NUL, pointers into unmapped memory,
// code heaps whose segment map never reaches a block, frames whose sender
// lies below them, cons strings of 2^16 pieces, optimized code whose
// deoptimization data and position tables lie, methods and functions
// freed and replaced; some exit while being read. ehprof record -a and -p
// keep running and end when asked, say one line per binary they refuse,
// never hang or walk a frame over and over, name those processes' frames
// only from what their own memory held, and go on sampling a native
// program beside them completely.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/hostile_user.h"
#include "tests/server_process.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::RunEhprof;
using testing::RunResult;
using testing::TestdataPath;

// hostile_jvm.h's and hostile_v8.h's variants: 0 takes the runtime and then
// churns its objects; the others each spoil one table or value.
constexpr int kJvmVariants = 11, kNodeVariants = 5;
constexpr char kJvmComm[] = "hjvm";

// One sample of perf-script output: its process and time, its frames'
// names, leaf first (kernel ones included).
struct Sample {
  std::string comm;
  pid_t pid = 0;
  double at = 0;
  std::vector<std::string> frames;
};

std::vector<Sample> ReadPerfScript(const std::string& path) {
  std::vector<Sample> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    if (line[0] != '\t' && line[0] != ' ') {
      // "comm pid [cpu] seconds: period event:"
      const std::vector<std::string> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
      if (w.size() < 4) continue;
      out.push_back({w[0], std::atoi(w[1].c_str()), std::atof(w[3].c_str()), {}});
      continue;
    }
    // "\t    addr symbol (dso)": the symbol may hold spaces ("[jvm: stub]").
    const size_t addr = line.find_first_not_of(" \t");
    const size_t sym = line.find(' ', addr);
    const size_t dso = line.rfind(" (");
    if (out.empty() || sym == std::string::npos || dso == std::string::npos || dso <= sym) continue;
    out.back().frames.push_back(line.substr(sym + 1, dso - sym - 1));
  }
  return out;
}

bool Has(const Sample& s, const std::string& frame) {
  return std::find(s.frames.begin(), s.frames.end(), frame) != s.frames.end();
}

class HostileRuntimes : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!testing::RequireRootForBpf()) GTEST_SKIP();
    dir_ = "/tmp/hostile_runtimes." + std::to_string(getpid());
    user_ = dir_ + "/user";
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(user_ + "/hostilejvm");
    ::chmod(dir_.c_str(), 0755);
    // The user's own files, as they would install them.
    std::filesystem::copy_file(TestdataPath("hostile_runtime"), user_ + "/" + kJvmComm);
    std::filesystem::copy_file(TestdataPath("hostile_runtime"), user_ + "/node");
    std::filesystem::copy_file(TestdataPath("hostilejvm/libjvm.so"), user_ + "/hostilejvm/libjvm.so");
    for (const auto& e : std::filesystem::recursive_directory_iterator(user_)) {
      ASSERT_EQ(::chown(e.path().c_str(), testing::kNobody, testing::kNobody), 0);
    }
    ASSERT_EQ(::chown(user_.c_str(), testing::kNobody, testing::kNobody), 0);
    work_ = testing::SpawnProgram({TestdataPath("deep_recursion"), "60", "20"});
    ASSERT_GT(work_, 0);
  }
  void TearDown() override {
    for (pid_t p : children_) Reap(p);
    Reap(work_);
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  static void Reap(pid_t pid) {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  // argv run as uid/gid 65534; its pid.
  pid_t AsNobody(const std::vector<std::string>& argv) {
    const pid_t pid = fork();
    if (pid == 0) {
      if (!testing::BecomeUser()) _exit(2);
      alarm(90);  // whatever happens to the test, it ends
      std::vector<char*> args;
      for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
      args.push_back(nullptr);
      execv(args[0], args.data());
      _exit(127);
    }
    children_.push_back(pid);
    return pid;
  }
  pid_t Jvm(int variant, int seconds) {
    const pid_t pid = AsNobody({user_ + "/" + kJvmComm, "jvm", user_ + "/hostilejvm/libjvm.so",
                                std::to_string(variant), std::to_string(seconds)});
    jvm_pids_.insert(pid);
    return pid;
  }
  pid_t Node(int variant, int seconds) {
    const pid_t pid = AsNobody({user_ + "/node", "node", std::to_string(variant), std::to_string(seconds)});
    node_pids_.insert(pid);
    return pid;
  }
  // Every other variant, one after another, each living a second or two
  // (variant 0, coherent for its first second, dies while being read).
  void StartShortLived() {
    for (int v = 1; v < kJvmVariants; ++v) {
      Jvm(v, 1);
      if (v < kNodeVariants) Node(v, 1);
      if (v % 3 == 0) Jvm(0, 2);
      std::this_thread::sleep_for(std::chrono::milliseconds(400));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  }
  void ExpectStderrClean(const RunResult& r) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    for (const char* bad : {"terminate", "internal error", "Sanitizer", "killed after"}) {
      EXPECT_FALSE(absl::StrContains(r.err, bad)) << bad << "\n" << r.err;
    }
  }
  // Judges a recording's perf-script output: deep_recursion's samples from
  // `skip` s after its first on (the walks of a process already running
  // when a recording starts stop at the leaf until its tables are loaded).
  void ExpectJudged(const std::string& perf_script, double skip);

  std::string dir_, user_;
  pid_t work_ = -1;  // deep_recursion: the program that must go on being sampled completely
  std::vector<pid_t> children_;
  std::set<pid_t> jvm_pids_, node_pids_;  // the fakes
};

// The names a fake's frames may take from its own memory, and the markers
// of frames that did not read. A node fake's JavaScript names are the
// strings its heap held, torn reads included (a length changed under the
// reader reads on into its own heap).
bool AllowedJvmFrame(const std::string& f) {
  static const std::set<std::string> kNamed = {"EvilClass.evil", "EvilClass.wicked", "[jvm: stub]",
                                               "[jvm: interpreter]", "[jvm: compiled code, method unreadable]",
                                               "[jvm: unknown code]"};
  if (absl::StrContains(f, "Evil") || absl::StartsWith(f, "[jvm")) return kNamed.contains(f);
  return !absl::StrContains(f, "evilJs") && !absl::StrContains(f, "wickedJs");
}

bool AllowedNodeFrame(const std::string& f) { return !absl::StrContains(f, "Evil") && !absl::StartsWith(f, "[jvm"); }

bool FakeName(const std::string& f) {
  return absl::StrContains(f, "EvilClass") || absl::StrContains(f, "evilJs") || absl::StrContains(f, "wickedJs");
}

bool NamedJs(const Sample& s) {
  return std::any_of(s.frames.begin(), s.frames.end(), [](const std::string& f) {
    return absl::StartsWith(f, "evilJs") || absl::StartsWith(f, "wickedJs");
  });
}

void HostileRuntimes::ExpectJudged(const std::string& perf_script, double skip) {
  const std::vector<Sample> samples = ReadPerfScript(perf_script);
  ASSERT_FALSE(samples.empty());
  const double first = samples.front().at;
  uint64_t jvm_named = 0, js_named = 0, work = 0, work_complete = 0;
  std::string incomplete;
  for (const Sample& s : samples) {
    const bool jvm = jvm_pids_.contains(s.pid), node = node_pids_.contains(s.pid);
    for (const std::string& f : s.frames) {
      // Other processes (the machine's own JVMs and node too) never get a
      // fake's names; deep_recursion gets no runtime frame at all.
      const bool allowed = jvm ? AllowedJvmFrame(f) : node ? AllowedNodeFrame(f) : !FakeName(f);
      EXPECT_TRUE(allowed) << s.comm << " " << s.pid << ": " << f;
      const bool runtime_frame = absl::StartsWith(f, "[jvm") || absl::StartsWith(f, "[v8");
      EXPECT_FALSE(s.pid == work_ && runtime_frame) << f;
    }
    // No frame walked over and over: a fake's stacks are a dozen deep.
    EXPECT_TRUE(!(jvm || node) || s.frames.size() < 64) << s.pid << ": " << absl::StrJoin(s.frames, ";");
    if (jvm && Has(s, "hostile_inner") && (Has(s, "EvilClass.evil") || Has(s, "EvilClass.wicked"))) ++jvm_named;
    if (node && NamedJs(s)) ++js_named;
    if (s.pid == work_ && s.at - first >= skip) {
      ++work;
      if (Has(s, "recurse_leaf") && Has(s, "main")) {
        ++work_complete;
      } else if (incomplete.size() < 2000) {
        absl::StrAppend(&incomplete, absl::StrJoin(s.frames, ";").substr(0, 300), "\n");
      }
    }
  }
  // The readers were reached (the fakes were taken and named), not refused
  // at the door; the native program was sampled and walked to main.
  EXPECT_GT(jvm_named, 20u);
  EXPECT_GT(js_named, 20u);
  EXPECT_GT(work, 50u);
  EXPECT_GE(work_complete * 100, work * 98) << work_complete << " of " << work << "\n" << incomplete;
}

size_t Lines(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) n += absl::StrContains(line, needle) ? 1 : 0;
  return n;
}

// record -a: the long-lived fakes churn, the short-lived ones come and go.
TEST_F(HostileRuntimes, RecordAllKeepsSamplingAndNamesNothingWrongly) {
  const std::string perf = dir_ + "/all.perf";
  // The fakes arrive 1.5 s into the recording, once deep_recursion's
  // tables are loaded: from then on each of its samples is judged.
  RunResult r = RunEhprof({"record", "-a", "-F", "199", "-o", perf}, SIGINT, 1500, [&](pid_t) {
    Jvm(0, 30);
    Node(0, 30);
    StartShortLived();
  });
  ExpectStderrClean(r);
  EXPECT_TRUE(absl::StrContains(r.err, "ended by")) << r.err;
  // One line for the libjvm.so whose JVMs it refused, one for the node.
  EXPECT_EQ(Lines(r.err, user_ + "/hostilejvm/libjvm.so"), 1u) << r.err;
  EXPECT_EQ(Lines(r.err, user_ + "/node"), 1u) << r.err;
  ExpectJudged(perf, 1.5);
}

// record -p on the churning fakes (and the torn ones, whose tables change
// as they are read) and the native program for 6 s: ended by its duration.
TEST_F(HostileRuntimes, RecordPidEndsOnTimeAndNamesNothingWrongly) {
  const pid_t jvm = Jvm(0, 30), node = Node(0, 30), torn_jvm = Jvm(8, 30), torn_node = Node(4, 30);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const std::string perf = dir_ + "/pids.perf";
  const auto start = std::chrono::steady_clock::now();
  RunResult r = RunEhprof({"record", "-p", absl::StrCat(jvm, ",", node, ",", torn_jvm, ",", torn_node, ",", work_),
                           "-F", "199", "-d", "6", "-o", perf});
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ExpectStderrClean(r);
  EXPECT_TRUE(absl::StrContains(r.err, "ended by duration")) << r.err;
  EXPECT_LT(took, 30.0) << r.err;
  // Reading the fakes costs what reading a real runtime does: a name of
  // 2^16 cons pieces once took half a CPU, re-read every 100 ms.
  std::smatch cpu;
  ASSERT_TRUE(std::regex_search(r.err, cpu, std::regex(R"(own CPU time while recording ([0-9.]+)%)"))) << r.err;
  EXPECT_LT(std::stod(cpu[1].str()), 15.0) << r.err;
  std::printf("record -p on the fakes: %s%% of a CPU\n", cpu[1].str().c_str());
  // What it kept of them: the fake JVMs read, their two methods named
  // (again when their memory changed), little held.
  std::smatch kept;
  ASSERT_TRUE(std::regex_search(
      r.err, kept, std::regex(R"(JVM metadata: (\d+) JVMs \((\d+) running\), (\d+) methods named, ([0-9.]+) KB)")))
      << r.err;
  EXPECT_GE(std::stoul(kept[1].str()), 1u) << r.err;
  EXPECT_GE(std::stoul(kept[3].str()), 1u) << r.err;
  EXPECT_LT(std::stod(kept[4].str()), 256.0) << r.err;
  ExpectJudged(perf, 1.0);
}

}  // namespace
}  // namespace ehprof
