// Ruby frames through YJIT's code, judged on testdata/ruby/yjit.rb (hot
// methods in two threads: a call from method to method inside JIT code,
// recursion, a block a C method yields to) under Debian 12's ruby3.1
// --yjit: each Ruby thread's samples carry its Ruby frames, in the order
// Ruby runs them, samples in JIT code among them, and the walk goes on
// below the JIT code to the thread's first frame (_start, clone3).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/srcline_perf_script.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::SrclineFrame;
using testing::SrclineSample;

constexpr char kRuby[] = "/usr/bin/ruby3.1";

bool IsRubyCode(const SrclineFrame& f) { return absl::EndsWith(f.dso, "yjit.rb"); }
// A frame of YJIT's code: a pc in anonymous memory.
bool IsJit(const SrclineFrame& f) { return f.dso == "[anon]"; }

int Find(const SrclineSample& s, const std::string& symbol, size_t from = 0) {
  for (size_t i = from; i < s.frames.size(); ++i) {
    if (s.frames[i].symbol == symbol) return static_cast<int>(i);
  }
  return -1;
}

// The Ruby code frames of s, leaf first.
std::vector<std::string> RubyCode(const SrclineSample& s) {
  std::vector<std::string> out;
  for (const SrclineFrame& f : s.frames) {
    if (IsRubyCode(f)) out.push_back(f.symbol);
  }
  return out;
}

bool YjitAvailable() {
  const std::string cmd = absl::StrCat(kRuby, " --yjit -e 'exit(RubyVM::YJIT.enabled? ? 0 : 1)' >/dev/null 2>&1");
  return std::system(cmd.c_str()) == 0;
}

TEST(RubyYjit, Debian12Ruby31) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  if (access(kRuby, X_OK) != 0) GTEST_SKIP() << "Debian 12's ruby3.1 is not installed";
  if (!YjitAvailable()) GTEST_SKIP() << kRuby << " is built without YJIT";
  const std::string out = absl::StrCat(::testing::TempDir(), "/yjit.", getpid(), ".txt"), log = out + ".err";
  const std::string cmd =
      absl::StrCat("timeout 120 ", testing::EhprofBinary(), " record -F 499 --srcline -o ", out, " -- ", kRuby,
                   " --yjit ", testing::SourcePath("testdata/ruby/yjit.rb"), " 4 >/dev/null 2>", log);
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << testing::ReadFile(log);
  const auto samples = testing::ParseSrclinePerfScript(testing::ReadFile(out));
  std::remove(out.c_str());
  std::remove(log.c_str());

  // Each Ruby thread from its first sample with a Ruby frame to its last.
  std::map<uint32_t, size_t> first, last;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (RubyCode(samples[i]).empty()) continue;
    if (!first.count(samples[i].tid)) first[samples[i].tid] = i;
    last[samples[i].tid] = i;
  }
  size_t running = 0, with_ruby = 0, jit = 0, jit_with_ruby = 0, rooted = 0;
  size_t inner = 0, inner_ok = 0, fib = 0, fib_ok = 0, block = 0, block_ok = 0, markers = 0;
  std::map<std::string, std::set<uint32_t>> tids;
  for (size_t i = 0; i < samples.size(); ++i) {
    const SrclineSample& s = samples[i];
    if (!first.count(s.tid) || i < first[s.tid] || i > last[s.tid]) continue;
    ++running;
    const std::vector<std::string> code = RubyCode(s);
    with_ruby += !code.empty();
    bool in_jit = false;
    for (const SrclineFrame& f : s.frames) {
      in_jit |= IsJit(f);
      // A walk's stop marker (a frame the tracker could not name, as in
      // rubygems' code while the script starts, is no stop).
      markers += absl::StartsWith(f.symbol, "[ruby:") && f.symbol != "[ruby: unreadable frame]";
    }
    jit += in_jit;
    jit_with_ruby += in_jit && !code.empty();
    const std::string root = s.frames.empty() ? "" : s.frames.back().symbol;
    rooted += root == "_start" || root == "clone3" || root == "clone";
    if (code.empty()) continue;
    for (const char* fn : {"jit_outer", "jit_loop"}) {
      if (Find(s, fn) >= 0) tids[fn].insert(s.tid);
    }
    if (code[0] == "jit_inner") {
      ++inner;
      inner_ok += code.size() >= 3 && code[1] == "jit_outer" && code[2] == "jit_thread_one";
    }
    if (code[0] == "jit_fib") {
      ++fib;
      size_t n = 0;
      while (n < code.size() && code[n] == "jit_fib") ++n;
      fib_ok += n <= 19 && n < code.size() && code[n] == "jit_thread_one";
    }
    if (code[0] == "block in jit_times") {
      ++block;
      const int b = Find(s, "block in jit_times"), times = Find(s, "times", b + 1);
      const int method = Find(s, "jit_times", times + 1), thread = Find(s, "jit_thread_one", method + 1);
      block_ok += b >= 0 && times > b && method > times && thread > method;
    }
  }
  ASSERT_GE(running, 300u) << "too few samples to judge";
  EXPECT_GE(with_ruby * 100, running * 98) << with_ruby << " of " << running << " samples carry Ruby frames";
  EXPECT_GE(jit * 100, running * 20) << "samples in JIT code: " << jit << " of " << running;
  // (One in about 1,500 did not, under load: not yet looked into.)
  EXPECT_GE(jit_with_ruby * 1000, jit * 995) << jit_with_ruby << " of " << jit << " samples in JIT code carry Ruby frames";
  EXPECT_GE(rooted * 100, running * 98) << rooted << " of " << running << " walks reach _start or clone3";
  EXPECT_LE(markers * 100, running) << markers << " stop markers";
  ASSERT_EQ(tids["jit_outer"].size(), 1u);
  ASSERT_EQ(tids["jit_loop"].size(), 1u);
  EXPECT_NE(*tids["jit_outer"].begin(), *tids["jit_loop"].begin()) << "each thread its own methods";
  EXPECT_GE(inner, 5u);
  EXPECT_EQ(inner_ok, inner) << "jit_inner under jit_outer under jit_thread_one";
  EXPECT_GE(fib, 5u);
  EXPECT_EQ(fib_ok, fib) << "jit_fib recursion, at most 19 deep, under jit_thread_one";
  EXPECT_GE(block, 5u);
  EXPECT_EQ(block_ok, block) << "block, times, jit_times, jit_thread_one in that order";
}

}  // namespace
}  // namespace ehprof
