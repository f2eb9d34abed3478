// What the flame graph says besides names and widths: tooltips with the
// frame's kind, file and lines; the legend of colours (which kinds, where, not
// over the frames); the details line under the title; the search help. Read
// back with tests/svg_reader.h; tests/flamegraph_browser_priv_test.cc checks
// the same in a browser.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "agent/output/output_svg.h"
#include "agent/resolve/resolved_sample.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/svg_reader.h"

namespace ehprof {
namespace {

using ::testing::HasSubstr;
using namespace svg_test;  // NOLINT: the reader's vocabulary is these tests'

ResolvedFrame At(ResolvedFrame f, std::string file, uint32_t line) {
  f.src_file = std::move(file);
  f.line = line;
  return f;
}

TEST(FlameGraphSvgInfoTest, TooltipsSayKindFileAndLine) {
  const Svg svg = Render({Sample({Kernel("k"), Lib("write"), At(Inlined("i"), "app.cc", 7),
                                  At(User("u"), "app.cc", 12), User("main")}),
                          Sample({ResolvedFrame{0x10, "[unknown]", "/lib/libz.so.1", false, false},
                                  At(User("u"), "app.cc", 15), User("main")})});
  EXPECT_EQ(svg.Find("k")->tip, "k (1 sample, 50.00%)\nkernel");
  EXPECT_EQ(svg.Find("write")->tip,
            "write (1 sample, 50.00%)\nlibrary code in /lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(svg.Find("i")->tip,
            "i (1 sample, 50.00%)\ninlined into the frame below in /bin/app\napp.cc:7");
  // Merged from two call sites: both lines.
  EXPECT_EQ(svg.Find("u")->tip, "u (2 samples, 100.00%)\nuser code in /bin/app\napp.cc:12, 15");
  EXPECT_EQ(svg.Find("main")->tip, "main (2 samples, 100.00%)\nuser code in /bin/app");
  EXPECT_EQ(svg.Find("[libz.so.1]")->tip,
            "[libz.so.1] (1 sample, 50.00%)\nunresolved (no symbol) in /lib/libz.so.1");
  EXPECT_EQ(svg.Find("app")->tip, "app (2 samples, 100.00%)\ncommand name (comm)");
  EXPECT_EQ(svg.frames[0].tip, "all (2 samples, 100.00%)");
}

TEST(FlameGraphSvgInfoTest, TooltipLinesAreCappedAndFilesCleaned) {
  std::vector<ResolvedSample> samples;
  for (uint32_t line : {40, 10, 30, 20, 10}) {
    samples.push_back(Sample({At(User("f" + std::to_string(line)), "a.cc", 1),
                              At(User("main"), "m\x01.cc", line)}));
  }
  const Svg svg = Render(samples);
  // The control byte comes escaped from the profile's strings (PrintableText).
  EXPECT_EQ(svg.Find("main")->tip,
            "main (5 samples, 100.00%)\nuser code in /bin/app\nm\\x01.cc:10, 20, 30, ...");
}

// Geometry of <g id="legend">'s swatches and names, top to bottom.
struct LegendItem {
  std::string name, fill;
  double x, y, width;
};
std::vector<LegendItem> Legend(const Svg& svg) {
  std::vector<LegendItem> items;
  const XmlNode* legend = FindById(*svg.root, "legend");
  EXPECT_NE(legend, nullptr);
  if (!legend) return items;
  for (size_t i = 0; i + 1 < legend->children.size(); i += 2) {
    const XmlNode& rect = *legend->children[i];
    const XmlNode& text = *legend->children[i + 1];
    EXPECT_EQ(rect.tag, "rect");
    EXPECT_EQ(text.tag, "text");
    items.push_back({text.text, rect.attrs.at("fill"), std::stod(rect.attrs.at("x")),
                     std::stod(rect.attrs.at("y")),
                     std::stod(text.attrs.at("x")) - std::stod(rect.attrs.at("x")) +
                         text.text.size() * 12 * 0.62});
  }
  return items;
}

TEST(FlameGraphSvgInfoTest, LegendNamesTheKindsDrawnAboveTheFrames) {
  const Svg svg = Render({Sample({Kernel("k"), Lib("write"), User("main")})});
  const std::vector<LegendItem> items = Legend(svg);
  std::vector<std::string> names;
  for (const LegendItem& i : items) names.push_back(i.name);
  EXPECT_EQ(names, (std::vector<std::string>{"comm", "user code", "library", "kernel"}));
  double top = 1e9;
  for (const Frame& f : svg.frames) top = std::min(top, f.y);
  for (const LegendItem& i : items) {
    EXPECT_LE(i.y + 11, top) << i.name << " overlaps the frames";
    EXPECT_GE(i.y, 24) << i.name << " overlaps the title";
    EXPECT_EQ(i.y, items[0].y);  // one row
  }
  EXPECT_GT(ParseRgb(items[3].fill).b, ParseRgb(items[3].fill).r);  // kernel: blue
}

// Python, Java, JavaScript, Ruby and PHP frames each have a colour of their
// own, apart from every other kind's, and their legend entry and tooltip words.
TEST(FlameGraphSvgInfoTest, RuntimeFramesHaveTheirOwnColourAndLegend) {
  ResolvedFrame py = User("serve"), java = User("Main.run"), js = User("handle"), rb = User("Greeter#hi"),
                php = User("Cart::total"), unknown;
  rb.runtime = FrameRuntime::kRuby;
  php.runtime = FrameRuntime::kPhp;
  py.runtime = FrameRuntime::kPython;
  java.runtime = FrameRuntime::kJava;
  js.runtime = FrameRuntime::kJavaScript;
  unknown.addr = 0x10;
  unknown.dso = "[unknown]";
  FlameGraphOptions wide;
  wide.width = 2000;  // the legend in one row
  const Svg svg =
      Render({Sample({Kernel("k"), Lib("write"), php, rb, js, java, py, At(Inlined("i"), "a.cc", 1), User("main"), unknown})},
             wide);
  const std::vector<LegendItem> items = Legend(svg);
  std::vector<std::string> names;
  for (const LegendItem& i : items) names.push_back(i.name);
  EXPECT_EQ(names, (std::vector<std::string>{"comm", "user code", "library", "kernel", "inlined", "unresolved",
                                             "Python", "Java", "JavaScript", "Ruby", "PHP"}));
  for (size_t a = 0; a < items.size(); ++a) {
    for (size_t b = a + 1; b < items.size(); ++b) EXPECT_NE(items[a].fill, items[b].fill) << names[a] << names[b];
  }
  EXPECT_THAT(svg.Find("handle")->tip, HasSubstr("\nJavaScript function"));
  EXPECT_THAT(svg.Find("Main.run")->tip, HasSubstr("\nJava method"));
  EXPECT_THAT(svg.Find("Greeter#hi")->tip, HasSubstr("\nRuby method or block"));
  EXPECT_THAT(svg.Find("Cart::total")->tip, HasSubstr("\nPHP function"));
  // Pink, light enough for the black labels: red and blue over green.
  const auto pink = ParseRgb(items[items.size() - 3].fill);
  EXPECT_GT(pink.r, pink.g);
  EXPECT_GT(pink.b, pink.g);
  EXPECT_GT(pink.r + pink.g + pink.b, 3 * 128);
}

TEST(FlameGraphSvgInfoTest, LegendWrapsInANarrowImage) {
  const Svg svg = Render({Sample({Kernel("k"), Lib("write"), Inlined("i"), User("main"),
                                  ResolvedFrame{0x10, "", "[unknown]", false, false}})},
                         {.width = 300});
  const std::vector<LegendItem> items = Legend(svg);
  ASSERT_EQ(items.size(), 6u);
  EXPECT_GT(items.back().y, items.front().y);
  double top = 1e9;
  for (const Frame& f : svg.frames) top = std::min(top, f.y);
  for (const LegendItem& i : items) {
    EXPECT_LE(i.x + i.width, 300) << i.name;
    EXPECT_LE(i.y + 11, top) << i.name;
  }
}

TEST(FlameGraphSvgInfoTest, DetailsUnderTheTitle) {
  const Svg plain = Render({Sample({User("main")})}, {.title = "T"});
  EXPECT_EQ(FindById(*plain.root, "info"), nullptr);
  const Svg svg = Render({Sample({User("main")})}, {.title = "T", .details = "fio <x> | 99 Hz"});
  const XmlNode* info = FindById(*svg.root, "info");
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->text, "fio <x> | 99 Hz");
  EXPECT_EQ(Child(*svg.root, "title")->text, "T | fio <x> | 99 Hz");
  EXPECT_NEAR(svg.frames.back().y - plain.frames.back().y, 18, 0.01);  // room for the line
  // Fixed size for viewers without scripts; the script fits it to a window.
  EXPECT_EQ(svg.root->attrs.at("width"), "1200");
  EXPECT_EQ(svg.root->attrs.at("viewBox"), "0 0 1200 " + svg.root->attrs.at("height"));
}

TEST(FlameGraphSvgInfoTest, DetailsText) {
  EXPECT_EQ(FlameGraphDetails("fio --name=x", 999, 2.5, int64_t{1764000000} * 1000000000),
            "fio --name=x | 999 Hz | 2.50 s | 2025-11-24 16:00:00 UTC");
  EXPECT_EQ(FlameGraphDetails("", 0, 0, 0), "");
  EXPECT_EQ(FlameGraphDetails("-p 12", 0, 1, 0), "-p 12 | 1.00 s");
  EXPECT_EQ(FlameGraphDetails(std::string(150, 'c'), 99, 0, 0),
            std::string(100, 'c') + "... | 99 Hz");
}

TEST(FlameGraphSvgInfoTest, SearchHelpInTheFile) {
  const Svg svg = Render({Sample({User("main")})});
  const XmlNode* help = FindById(*svg.root, "help");
  ASSERT_NE(help, nullptr);
  EXPECT_THAT(help->text, HasSubstr("as written"));
  EXPECT_THAT(help->text, HasSubstr("/REGEX/"));
}

}  // namespace
}  // namespace ehprof
