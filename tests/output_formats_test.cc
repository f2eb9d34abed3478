// The table of output formats and each writer on a small model built by
// hand (no resolver, no recording): what a format makes of the model's
// strings, locations, inline lines, samples and events.
#include "agent/output/output_formats.h"

#include <optional>
#include <sstream>
#include <string>

#include "agent/output/interned_profile.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

// comm "app" (pid 7, tid 8): kernel schedule <- inlined helper in work
// (one location, two lines) <- main; twice, at 1.5 s on CPU 2 and 2 s on
// CPU 3. And once "app" with main alone.
InternedProfile HandBuilt() {
  InternedProfile p;
  p.strings = {"", "app", "/bin/app", "[kernel.kallsyms]", "schedule", "helper", "work", "main", "a.c", "a.h"};
  p.mappings = {{2, 0x400000, 0x500000, 0, false}, {3, 0, 0, 0, true}};
  p.functions = {{4, 3, 0}, {5, 2, 9}, {6, 2, 8}, {7, 2, 8}};
  p.lines = {{0, 0, 0}, {1, 12, 9}, {2, 40, 8}, {3, 7, 8}};
  using K = InternedProfile::Kind;
  p.locations = {{1, 0xffffffff81000010, 0xffffffff81000010, 0xffffffff81000000, 0, 1, K::kKernel},
                 {0, 0x401234, 0x1234, 0x1200, 1, 2, K::kNative},
                 {0, 0x401100, 0x1100, 0, 3, 1, K::kNative}};
  p.samples = {{{0, 1, 2}, 1, 7, 8, {}, 2, 0, false}, {{2}, 1, 7, 8, {}, 1, 0, false}};
  p.events = {{0, 2, 1500000000, 1, 0}, {1, 0, 1700000000, 1, 0}, {0, 3, 2000000000, 1, 0}};
  return p;
}

std::string Write(std::string_view format, const InternedProfile& p, const OutputSettings& s = {}) {
  const OutputFormat* f = FindOutputFormat(format);
  EXPECT_NE(f, nullptr) << format;
  std::ostringstream out;
  EXPECT_TRUE(f->write(p, s, out).ok()) << format;
  return out.str();
}

TEST(OutputFormats, TableNamesEveryFormatOnce) {
  EXPECT_EQ(OutputFormatNames(), "svg | folded | perf-script | pprof | text");
  for (const OutputFormat& f : OutputFormats()) {
    EXPECT_EQ(FindOutputFormat(f.name), &f);
    EXPECT_NE(f.write, nullptr) << f.name;
    for (std::string_view ext : f.extensions) EXPECT_EQ(FormatForPath(std::string("x") + std::string(ext)).name, f.name);
  }
  EXPECT_EQ(FindOutputFormat("png"), nullptr);
}

TEST(OutputFormats, PathsImplyFormats) {
  EXPECT_EQ(FormatForPath("p.svg").name, "svg");
  EXPECT_EQ(FormatForPath("p.folded").name, "folded");
  EXPECT_EQ(FormatForPath("p.collapsed").name, "folded");
  EXPECT_EQ(FormatForPath("p.pb.gz").name, "pprof");
  EXPECT_EQ(FormatForPath("p.pprof").name, "pprof");
  EXPECT_EQ(FormatForPath("p.txt").name, "perf-script");
  EXPECT_EQ(FormatForPath("ehprof.out").name, "perf-script");
  EXPECT_EQ(FormatForPath("/dev/stdout").name, "perf-script");
}

TEST(OutputFormats, PerSampleFormatsAreTheOnesThatPrintTimes) {
  for (const OutputFormat& f : OutputFormats()) {
    const bool timed = f.name == "perf-script" || f.name == "text";
    EXPECT_EQ(f.per_sample, timed) << f.name;
    EXPECT_EQ(f.per_thread_wall, f.name == "svg" || f.name == "folded") << f.name;
  }
}

TEST(OutputFormats, FoldedSumsSamplesRootFirstWithInlineLines) {
  EXPECT_EQ(Write("folded", HandBuilt()), "app;main 1\napp;main;work;helper;schedule 2\n");
  OutputSettings s;
  s.folded.annotate = true;
  s.folded.srcline = true;
  EXPECT_EQ(Write("folded", HandBuilt(), s),
            "app;main (a.c:7) 1\napp;main (a.c:7);work (a.c:40);helper (a.h:12)_[i];schedule_[k] 2\n");
}

TEST(OutputFormats, PerfScriptPrintsEachEventInOrder) {
  OutputSettings s;
  s.script.event = "cpu-clock";
  s.script.period = 1001001;
  const std::string one =
      "\tffffffff81000010 schedule ([kernel.kallsyms])\n"
      "\t            1234 helper (inlined)\n"
      "\t            1234 work (/bin/app)\n"
      "\t            1100 main (/bin/app)\n\n";
  EXPECT_EQ(Write("perf-script", HandBuilt(), s),
            "app     8 [002] 1.500000:    1001001 cpu-clock: \n" + one +
                "app     8 [000] 1.700000:    1001001 cpu-clock: \n\t            1100 main (/bin/app)\n\n" +
                "app     8 [003] 2.000000:    1001001 cpu-clock: \n" + one);
}

TEST(OutputFormats, TextPrintsEventsWithOffsetsAndSources) {
  const std::string text = Write("text", HandBuilt());
  EXPECT_EQ(text.substr(0, text.find("\n\n") + 2),
            "[0.000000] app: app (pid=7, tid=8) @ CPU 2\n"
            "Kernel:\n"
            "  0xffffffff81000010: schedule @ 0xffffffff81000000+0x10\n"
            "Userspace:\n"
            "  0x1234: helper a.h:12 (inlined) (/bin/app)\n"
            "  0x1234: work @ 0x1200+0x34 a.c:40 (/bin/app)\n"
            "  0x1100: main a.c:7 (/bin/app)\n\n");
  EXPECT_NE(text.find("[0.200000] app: app (pid=7, tid=8) @ CPU 0\nUserspace:\n  0x1100: main a.c:7 (/bin/app)\n\n"),
            std::string::npos);
  EXPECT_NE(text.find("[0.500000] app: app (pid=7, tid=8) @ CPU 3\n"), std::string::npos);
}

TEST(OutputFormats, WithoutEventsEachSampleOnceAtTimeZero) {
  InternedProfile p = HandBuilt();
  p.events.clear();
  const std::string script = Write("perf-script", p);
  // Sample 0 (count 2) twice, sample 1 once.
  EXPECT_EQ(script.substr(0, script.find('\n')), "app     8 ");
  size_t headers = 0;
  for (size_t at = 0; (at = script.find("app     8 \n", at)) != std::string::npos; ++at) ++headers;
  EXPECT_EQ(headers, 3u);
}

TEST(OutputFormats, SvgTitleCountsSamplesAndDrawsEveryFrame) {
  const std::string svg = Write("svg", HandBuilt());
  EXPECT_NE(svg.find("<text id=\"title\" class=\"title\" x=\"600\" y=\"24\" text-anchor=\"middle\">ehprof: 3 samples</text>"),
            std::string::npos);
  for (const char* name : {">app<", ">main<", ">work<", ">helper<", ">schedule<"}) {
    EXPECT_NE(svg.find(name), std::string::npos) << name;
  }
  OutputSettings wall;
  wall.pprof.ns_type = "off_cpu";
  EXPECT_NE(Write("svg", HandBuilt(), wall).find("ehprof: 0.000 s off-CPU"), std::string::npos);
}

TEST(OutputFormats, PprofHoldsTheModelsStringsOnce) {
  const std::string pb = Write("pprof", HandBuilt());
  ASSERT_GE(pb.size(), 2u);
  EXPECT_EQ(static_cast<unsigned char>(pb[0]), 0x1f);
  EXPECT_EQ(static_cast<unsigned char>(pb[1]), 0x8b);
  const std::optional<std::string> unzipped = testing::Gunzip(pb);
  ASSERT_TRUE(unzipped);
  const std::string& proto = *unzipped;
  // Every name and file once in the string table (tests/output_pprof_test.cc
  // decodes the rest with pprof's own schema).
  for (const char* s : {"schedule", "helper", "work", "/bin/app", "a.c", "a.h"}) {
    const size_t at = proto.find(s);
    EXPECT_NE(at, std::string::npos) << s;
    EXPECT_EQ(proto.find(s, at + 1), std::string::npos) << s;
  }
}

}  // namespace
}  // namespace ehprof
