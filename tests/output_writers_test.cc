// The perf-script and folded writers, byte for byte: tools downstream
// (stackcollapse-perf.pl, flamegraph.pl, speedscope) parse this text with
// regexes, so a stray space or newline is a bug.
#include <sstream>
#include <string>
#include <vector>

#include "agent/output/output_folded.h"
#include "agent/output/output_perf_script.h"
#include "agent/resolve/resolved_sample.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

ResolvedFrame Kernel(uint64_t addr, std::string symbol) {
  return {addr, std::move(symbol), "[kernel.kallsyms]", /*kernel=*/true, /*inlined=*/false};
}
ResolvedFrame User(uint64_t addr, std::string symbol, std::string dso) {
  return {addr, std::move(symbol), std::move(dso), false, false};
}
ResolvedFrame Inlined(uint64_t addr, std::string symbol, std::string dso) {
  return {addr, std::move(symbol), std::move(dso), false, /*inlined=*/true};
}

ResolvedSample Sample(std::string comm, uint32_t tid, std::vector<ResolvedFrame> frames,
                      uint64_t count = 1) {
  ResolvedSample s;
  s.comm = std::move(comm);
  s.pid = tid;
  s.tid = tid;
  s.frames = std::move(frames);
  s.count = count;
  return s;
}

// A page fault in malloc, an inlined loop, and a frame nothing resolved.
std::vector<ResolvedSample> SmallProfile() {
  const std::string libc = "/usr/lib/x86_64-linux-gnu/libc.so.6";
  return {
      Sample("seq", 29705,
             {Kernel(0xffffffff815ea064, "do_anonymous_page"),
              Kernel(0xffffffff81000c82, "asm_exc_page_fault"),
              User(0x98109, "_int_malloc", libc), User(0, "[unknown]", "[unknown]")}),
      Sample("t", 2,
             {Inlined(0x11b4, "inner", "/tmp/t"), Inlined(0x11b4, "mid", "/tmp/t"),
              User(0x11b4, "outer", "/tmp/t"), User(0x1061, "main", "/tmp/t")},
             2),
  };
}

std::string PerfScript(const std::vector<ResolvedSample>& samples) {
  std::ostringstream out;
  EXPECT_TRUE(WritePerfScript(samples, out).ok());
  return out.str();
}

std::string Folded(const std::vector<ResolvedSample>& samples, const FoldedOptions& options = {}) {
  std::ostringstream out;
  EXPECT_TRUE(WriteFolded(samples, out, options).ok());
  return out.str();
}

FoldedOptions Annotated() {
  FoldedOptions o;
  o.annotate = true;
  return o;
}

TEST(PerfScriptTest, MatchesPerfByteForByte) {
  // Captured from perf 6.1 `perf script -F comm,tid,ip,sym,dso [--inline]`.
  EXPECT_EQ(PerfScript(SmallProfile()),
            "seq 29705 \n"
            "\tffffffff815ea064 do_anonymous_page ([kernel.kallsyms])\n"
            "\tffffffff81000c82 asm_exc_page_fault ([kernel.kallsyms])\n"
            "\t           98109 _int_malloc (/usr/lib/x86_64-linux-gnu/libc.so.6)\n"
            "\t               0 [unknown] ([unknown])\n"
            "\n"
            "t     2 \n"
            "\t            11b4 inner (inlined)\n"
            "\t            11b4 mid (inlined)\n"
            "\t            11b4 outer (/tmp/t)\n"
            "\t            1061 main (/tmp/t)\n"
            "\n"
            "t     2 \n"
            "\t            11b4 inner (inlined)\n"
            "\t            11b4 mid (inlined)\n"
            "\t            11b4 outer (/tmp/t)\n"
            "\t            1061 main (/tmp/t)\n"
            "\n");
}

// Samples arrive out of time order (per-CPU buffers, walks finished late);
// perf script prints them in time order, which speedscope requires.
TEST(PerfScriptTest, EventsInTimeOrderNotArrivalOrder) {
  std::vector<ResolvedSample> samples = {Sample("late", 3, {User(0x30, "c", "/x")}),
                                         Sample("first", 1, {User(0x10, "a", "/x")}),
                                         Sample("second", 2, {User(0x20, "b", "/x")})};
  samples[0].time_ns = 3'000'000'000;
  samples[1].time_ns = 1'000'000'000;
  samples[2].time_ns = 2'000'500'000;
  samples[2].cpu = 1;
  PerfScriptOptions options;
  options.event = "cpu-clock";
  options.period = 1000;
  std::ostringstream out;
  ASSERT_TRUE(WritePerfScript(samples, out, options).ok());
  EXPECT_EQ(out.str(),
            "first     1 [000] 1.000000:       1000 cpu-clock: \n"
            "\t              10 a (/x)\n"
            "\n"
            "second     2 [001] 2.000500:       1000 cpu-clock: \n"
            "\t              20 b (/x)\n"
            "\n"
            "late     3 [000] 3.000000:       1000 cpu-clock: \n"
            "\t              30 c (/x)\n"
            "\n");
}

TEST(PerfScriptTest, EmptyNamesZeroCountAndNewlines) {
  EXPECT_EQ(PerfScript({Sample("a b", 1234567, {User(0x10, "", "")}),
                        Sample("skipped", 1, {User(0x10, "f", "/x")}, 0),
                        Sample("x\ny", 7, {User(0x20, "op\r\n", "/lib\n.so")}),
                        Sample("noframes", 8, {})}),
            "a b 1234567 \n"
            "\t              10 [unknown] ([unknown])\n"
            "\n"
            "x\\x0ay     7 \n"  // made printable when interned (base/printable_text.h)
            "\t              20 op\\x0d\\x0a (/lib\\x0a.so)\n"
            "\n"
            "noframes     8 \n"
            "\n");
}

TEST(FoldedTest, RootFirstSummedSortedPlainByDefault) {
  std::vector<ResolvedSample> samples = SmallProfile();
  // The same stack again adds to its line.
  samples.push_back(samples[1]);
  samples.back().count = 3;
  samples.push_back(Sample("a", 1, {User(0x1, "leaf", "/a")}));
  // What stackcollapse-perf.pl writes without options: no suffixes.
  EXPECT_EQ(Folded(samples),
            "a;leaf 1\n"
            "seq;[unknown];_int_malloc;asm_exc_page_fault;do_anonymous_page 1\n"
            "t;main;outer;mid;inner 5\n");
  // With annotate, stackcollapse-perf.pl --all's suffixes.
  EXPECT_EQ(Folded(samples, Annotated()),
            "a;leaf 1\n"
            "seq;[unknown];_int_malloc;asm_exc_page_fault_[k];do_anonymous_page_[k] 1\n"
            "t;main;outer;mid_[i];inner_[i] 5\n");
}

TEST(FoldedTest, DistinctCommsAreDistinctLines) {
  EXPECT_EQ(Folded({Sample("b", 1, {User(1, "f", "/x")}), Sample("a", 2, {User(1, "f", "/x")}),
                    Sample("b", 3, {User(1, "f", "/x")}, 4)}),
            "a;f 1\n"
            "b;f 5\n");
}

TEST(FoldedTest, EscapesWhatBreaksTheFormat) {
  EXPECT_EQ(Folded({Sample("Web Content ", 1,
                           {User(1, "a;b\nc ", "/x"), User(2, "", "/x"),
                            User(3, "operator new(unsigned long)", "/x")}),
                    Sample("z", 1, {User(1, "tab\there\x7f", "/x")})}),
            "Web_Content_;operator new(unsigned long);[x];a:b\\x0ac_ 1\n"
            "z;tab\\x09here\\x7f 1\n");
}

TEST(FoldedTest, InlinedKernelFrameIsMarkedInlined) {
  ResolvedFrame f = Kernel(1, "helper");
  f.inlined = true;
  EXPECT_EQ(FoldedFrameName(f, Annotated()), "helper_[i]");
  EXPECT_EQ(FoldedFrameName(Kernel(1, "schedule"), Annotated()), "schedule_[k]");
  ResolvedFrame jit = User(1, "jit_loop", "/tmp/perf-7.map");
  jit.jit = true;
  EXPECT_EQ(FoldedFrameName(jit, Annotated()), "jit_loop_[j]");
  EXPECT_EQ(FoldedFrameName(jit), "jit_loop");
  EXPECT_EQ(FoldedFrameName(f), "helper");
  // Unsymbolized frames name their file, as stackcollapse-perf.pl does.
  EXPECT_EQ(FoldedFrameName(User(1, "[unknown]", "/usr/lib/libfoo.so")), "[libfoo.so]");
  EXPECT_EQ(FoldedFrameName(User(1, "[unknown]", "[vdso]")), "[vdso]");
  EXPECT_EQ(FoldedFrameName(User(1, "[unknown]", "[unknown]")), "[unknown]");
}

TEST(OutputWritersTest, FailedStreamIsAnError) {
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  EXPECT_FALSE(WritePerfScript(SmallProfile(), out).ok());
  EXPECT_FALSE(WriteFolded(SmallProfile(), out).ok());
}

}  // namespace
}  // namespace ehprof

namespace ehprof {
namespace {

TEST(SrclineTest, PerfScriptAndFoldedCarrySourcePositionsWhenAsked) {
  ResolvedFrame inl;
  inl.addr = 0x10;
  inl.symbol = "helper";
  inl.dso = "/bin/x";
  inl.inlined = true;
  inl.src_file = "x.h";
  inl.line = 3;
  ResolvedFrame fn = inl;
  fn.symbol = "work";
  fn.inlined = false;
  fn.src_file = "x.c";
  fn.line = 9;
  ResolvedFrame none;
  none.addr = 0x20;
  none.symbol = "main";
  none.dso = "/bin/x";
  ResolvedSample s;
  s.comm = "x";
  s.tid = 5;
  s.frames = {inl, fn, none};
  std::ostringstream script;
  ASSERT_TRUE(WritePerfScript({s}, script, /*srcline=*/true).ok());
  EXPECT_EQ(script.str(),
            "x     5 \n"
            "\t              10 helper (inlined)\n  x.h:3\n"
            "\t              10 work (/bin/x)\n  x.c:9\n"
            "\t              20 main (/bin/x)\n  ??:0\n\n");
  std::ostringstream folded;
  FoldedOptions with_lines;
  with_lines.srcline = true;
  ASSERT_TRUE(WriteFolded({s}, folded, with_lines).ok());
  EXPECT_EQ(folded.str(), "x;main;work (x.c:9);helper (x.h:3) 1\n");
  std::ostringstream annotated;
  with_lines.annotate = true;
  ASSERT_TRUE(WriteFolded({s}, annotated, with_lines).ok());
  EXPECT_EQ(annotated.str(), "x;main;work (x.c:9);helper (x.h:3)_[i] 1\n");
}

}  // namespace
}  // namespace ehprof
