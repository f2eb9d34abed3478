// Perl frames in the walk, judged on testdata/perl/hot.pl (ten subs in two
// ithreads, recursion, a closure, a sort block calling a sub, a
// List::Util::reduce block) recorded under Debian 12's perl 5.36
// (/usr/bin/perl, the interpreter linked in): named subs in the order Perl
// runs them with the native frames of the C code that runs Perl code
// between them (pp_sort, List::Util's XS), each thread's interpreter its
// own, each thread's samples in perl carrying Perl frames, the hot loop's
// line exact.
#include <unistd.h>

#include <cstdio>
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

constexpr char kScript[] = "testdata/perl/hot.pl";

// A sub's or code block's frame; a stop marker ("[perl: ...]") is none.
bool IsPerl(const SrclineFrame& f) { return absl::EndsWith(f.dso, ".pl") || absl::EndsWith(f.dso, ".pm"); }
bool InPerl(const SrclineFrame& f) { return f.dso == "/usr/bin/perl" || absl::StrContains(f.dso, "libperl"); }

int Find(const SrclineSample& s, const std::string& symbol, size_t from = 0) {
  for (size_t i = from; i < s.frames.size(); ++i) {
    if (s.frames[i].symbol == symbol) return static_cast<int>(i);
  }
  return -1;
}

const SrclineFrame* LeafPerl(const SrclineSample& s) {
  for (const SrclineFrame& f : s.frames) {
    if (IsPerl(f)) return &f;
  }
  return nullptr;
}

// Whether a frame in (from, to) of s is native code of dso matching `what`.
bool NativeBetween(const SrclineSample& s, int from, int to, const std::string& what) {
  for (int i = from + 1; i < to; ++i) {
    if (absl::StrContains(s.frames[i].dso, what) || absl::StrContains(s.frames[i].symbol, what)) return true;
  }
  return false;
}

std::vector<SrclineSample> Record(double seconds, const std::string& mode = "threads") {
  const std::string out = absl::StrCat(::testing::TempDir(), "/pl.", getpid(), ".txt"), log = out + ".err";
  const std::string cmd = absl::StrCat("timeout 120 ", testing::EhprofBinary(), " record -F 499 --srcline -o ", out,
                                       " -- /usr/bin/perl ", testing::SourcePath(kScript), " ", mode, " ", seconds,
                                       " >/dev/null 2>", log);
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd << "\n" << testing::ReadFile(log);
  auto samples = testing::ParseSrclinePerfScript(testing::ReadFile(out));
  std::remove(out.c_str());
  std::remove(log.c_str());
  return samples;
}

struct Counts {
  size_t in_perl = 0, with_perl = 0;
  size_t sorts = 0, sorts_ordered = 0, reduces = 0, reduces_ordered = 0, trees = 0, trees_ok = 0;
  size_t adds = 0, add_lines = 0;
  std::map<std::string, std::set<uint32_t>> tids;
};

void Count(const std::vector<SrclineSample>& samples, Counts* c) {
  // Each thread from its first Perl frame to its last (before, perl
  // compiles; after, it tears the interpreter down: no sub runs).
  std::map<uint32_t, size_t> first, last;
  for (size_t i = 0; i < samples.size(); ++i) {
    if (!LeafPerl(samples[i])) continue;
    first.emplace(samples[i].tid, i);
    last[samples[i].tid] = i;
  }
  const int add_line = testing::SourceLineWith(kScript, "marker: hot_add loop");
  for (size_t i = 0; i < samples.size(); ++i) {
    const SrclineSample& s = samples[i];
    const SrclineFrame* leaf = LeafPerl(s);
    bool perl = false;
    for (const SrclineFrame& f : s.frames) perl |= InPerl(f);
    if (perl && first.count(s.tid) && i >= first[s.tid] && i <= last[s.tid]) ++c->in_perl, c->with_perl += leaf != nullptr;
    if (!leaf) continue;
    for (const char* fn : {"main::hot_str", "main::hot_tree"}) {
      if (Find(s, fn) >= 0) c->tids[fn].insert(s.tid);
    }
    const int one = Find(s, "main::thread_one");
    if (one < 0) continue;  // a walk cut short is judged elsewhere
    if (leaf->symbol == "main::sort_key") {
      // sort_key, the sort block (named for hot_sort), pp_sort's C code,
      // hot_sort at the sort's line, thread_one.
      ++c->sorts;
      const int key = Find(s, "main::sort_key"), block = Find(s, "main::hot_sort", key + 1);
      const int sub = Find(s, "main::hot_sort", block + 1);
      c->sorts_ordered += block > key && sub > block && one > sub && NativeBetween(s, block, sub, "Perl_pp_sort");
    }
    if (leaf->symbol == "main::__ANON__" && leaf->line == testing::SourceLineWith(kScript, "my $total = reduce")) {
      ++c->reduces;
      const int reduce = Find(s, "main::hot_reduce");
      c->reduces_ordered += reduce > 0 && one > reduce && NativeBetween(s, 0, reduce, "List/Util");
    }
    if (leaf->symbol == "main::hot_tree") {
      ++c->trees;
      int n = 0;
      for (const SrclineFrame& f : s.frames) n += f.symbol == "main::hot_tree";
      c->trees_ok += n >= 1 && n <= 8 && one > Find(s, "main::hot_tree");
    }
    if (leaf->symbol == "main::hot_add") {
      ++c->adds;
      c->add_lines += leaf->line == add_line;
      EXPECT_TRUE(absl::EndsWith(leaf->dso, kScript)) << leaf->dso;
    }
  }
}

TEST(PerlFrames, Debian12Perl536) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  if (access("/usr/bin/perl", X_OK) != 0) GTEST_SKIP() << "Debian 12's perl is not installed";
  Counts c;
  Count(Record(4), &c);
  std::printf("samples in perl %zu, with Perl frames %zu; sorts %zu/%zu, reduces %zu/%zu, trees %zu/%zu, hot_add lines %zu/%zu\n",
              c.in_perl, c.with_perl, c.sorts_ordered, c.sorts, c.reduces_ordered, c.reduces, c.trees_ok, c.trees,
              c.add_lines, c.adds);
  ASSERT_GE(c.in_perl, 200u) << "too few samples to judge";
  EXPECT_GE(c.with_perl * 100, c.in_perl * 98) << c.with_perl << " of " << c.in_perl;
  ASSERT_EQ(c.tids["main::hot_str"].size(), 1u);
  ASSERT_EQ(c.tids["main::hot_tree"].size(), 1u);
  EXPECT_NE(*c.tids["main::hot_str"].begin(), *c.tids["main::hot_tree"].begin()) << "each thread its own subs";
  EXPECT_GE(c.sorts, 5u);
  EXPECT_GE(c.sorts_ordered * 100, c.sorts * 95) << "sort_key, sort block, pp_sort, hot_sort, thread_one: "
                                                  << c.sorts_ordered << " of " << c.sorts;
  EXPECT_GE(c.reduces, 5u);
  EXPECT_GE(c.reduces_ordered * 100, c.reduces * 95) << "reduce's block, List::Util, hot_reduce, thread_one: "
                                                      << c.reduces_ordered << " of " << c.reduces;
  EXPECT_GE(c.trees, 5u);
  EXPECT_EQ(c.trees_ok, c.trees) << "hot_tree recursion, at most 8 deep, under thread_one";
  EXPECT_GE(c.adds, 10u);
  EXPECT_GE(c.add_lines * 100, c.adds * 98) << "hot_add's samples on its loop's line";
}

// hot.pl deep: deep() 50 subs deep, the walk's run of like contexts
// (taken by pl_scan, a loop of its own): every one of the 50 is main::deep,
// each caller at the line of the recursive call, then the main program.
// Judged are the samples in the innermost call's loop: one taken during the
// descent (microseconds, but CI met one) is rightly fewer than 50 deep.
TEST(PerlFrames, FiftySubsDeepEachNamedAtItsCall) {
  if (!testing::RequireRootForBpf()) GTEST_SKIP();
  if (access("/usr/bin/perl", X_OK) != 0) GTEST_SKIP() << "Debian 12's perl is not installed";
  const int call_line = testing::SourceLineWith(kScript, "return deep($n - 1)");
  const int loop_line = testing::SourceLineWith(kScript, "while (time < $end) { $s += $_ for 1 .. 1000; }");
  size_t deep = 0, whole = 0;
  std::string bad;
  for (const SrclineSample& s : Record(2, "deep")) {
    const SrclineFrame* leaf = LeafPerl(s);
    if (!leaf || leaf->symbol != "main::deep" || leaf->line != loop_line) continue;
    ++deep;
    std::vector<const SrclineFrame*> perl;
    for (const SrclineFrame& f : s.frames) {
      if (IsPerl(f)) perl.push_back(&f);
    }
    bool ok = perl.size() == 51 && perl[50]->symbol != "main::deep";
    for (size_t i = 0; ok && i < 50; ++i) ok = perl[i]->symbol == "main::deep" && (i == 0 || perl[i]->line == call_line);
    whole += ok;
    if (!ok && bad.empty()) {
      for (const SrclineFrame* f : perl) absl::StrAppend(&bad, f->symbol, ":", f->line, " ");
    }
  }
  ASSERT_GE(deep, 200u) << "too few samples to judge";
  EXPECT_EQ(whole, deep) << "50 main::deep frames at line " << call_line << " but the leaf; one sample: " << bad;
}

}  // namespace
}  // namespace ehprof
