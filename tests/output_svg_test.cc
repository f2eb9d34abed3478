// The flame graph SVG writer: parsed back with a small strict XML reader
// (tests/svg_reader.h), then checked frame by frame: geometry, tooltips,
// order, escaping, colours. tests/output_svg_info_test.cc checks what else
// it says (tooltip details, legend, title details, search help).
// tests/flamegraph_browser_priv_test.cc checks that a browser runs it.
#include "agent/output/output_svg.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "agent/resolve/resolved_sample.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/svg_reader.h"

namespace ehprof {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace svg_test;  // NOLINT: the reader's vocabulary is these tests'

TEST(FlameGraphSvgTest, EscapesNamesAndRoundTrips) {
  const std::string nasty = "operator<<(std::ostream&, \"x\") 'q' > y";
  const Svg svg = Render({Sample({User(nasty), User("main")}, 1, "a&b<c>"), Sample({User("main")})},
                         {.title = "T <&> \"q\""});
  ASSERT_NE(svg.root, nullptr);
  const Frame* f = svg.Find(nasty);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->title, nasty + " (1 sample, 50.00%)");
  EXPECT_THAT(svg.raw,
              HasSubstr("operator&lt;&lt;(std::ostream&amp;, &quot;x&quot;) &apos;q&apos; &gt; y"));
  EXPECT_THAT(svg.raw, Not(HasSubstr(nasty)));
  EXPECT_NE(svg.Find("a&b<c>"), nullptr);
  EXPECT_THAT(svg.raw, HasSubstr(">T &lt;&amp;&gt; &quot;q&quot;</text>"));
}

// Made printable when interned (base/printable_text.h), before the writer.
TEST(FlameGraphSvgTest, InvalidUtf8AndControlCharactersBecomeEscapes) {
  const Svg svg = Render({Sample({User("bad\xff\xc3z"), User("tab\there"), User("caf\xc3\xa9")})});
  ASSERT_NE(svg.root, nullptr);  // the reader rejects invalid UTF-8 and control characters
  EXPECT_NE(svg.Find("bad\\xff\\xc3z"), nullptr);
  EXPECT_NE(svg.Find("tab\\x09here"), nullptr);
  EXPECT_NE(svg.Find("caf\xc3\xa9"), nullptr);
}

TEST(FlameGraphSvgTest, WidthsProportionalToCounts) {
  // a: 3 samples (one of count 2, one of 1), b: 1 sample.
  const Svg svg = Render({Sample({User("a"), User("main")}, 2), Sample({User("b"), User("main")}),
                          Sample({User("a"), User("main")})});
  const Frame *all = svg.Find("all"), *main = svg.Find("main"), *a = svg.Find("a"),
              *b = svg.Find("b");
  ASSERT_TRUE(all && main && a && b);
  EXPECT_NEAR(all->width, 1200 - 20, 0.01);
  EXPECT_NEAR(main->width, all->width, 0.01);
  EXPECT_NEAR(a->width, 3 * b->width, 0.02);
  EXPECT_NEAR(a->width + b->width, main->width, 0.02);
  EXPECT_NEAR(a->x, main->x, 0.01);
  EXPECT_NEAR(b->x, a->x + a->width, 0.02);
  EXPECT_EQ(a->y, b->y);
}

TEST(FlameGraphSvgTest, TooltipsHaveCountsAndPercentages) {
  const Svg svg = Render({Sample({User("a"), User("main")}, 3), Sample({User("b"), User("main")})});
  ASSERT_EQ(svg.frames.size(), 5u);
  EXPECT_EQ(svg.frames[0].title, "all (4 samples, 100.00%)");
  EXPECT_EQ(svg.Find("app")->title, "app (4 samples, 100.00%)");
  EXPECT_EQ(svg.Find("a")->title, "a (3 samples, 75.00%)");
  EXPECT_EQ(svg.Find("b")->title, "b (1 sample, 25.00%)");
}

TEST(FlameGraphSvgTest, RootAtBottomThenCommThenFramesRootFirst) {
  const Svg svg = Render({Sample({Kernel("do_syscall_64"), User("write"), User("main")})});
  const std::vector<std::string> expected = {"all", "app", "main", "write", "do_syscall_64"};
  ASSERT_EQ(svg.frames.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(svg.frames[i].title.substr(0, svg.frames[i].title.find(" (")), expected[i]);
    if (i > 0) EXPECT_EQ(svg.frames[i].y, svg.frames[i - 1].y - 16) << expected[i];
  }
}

TEST(FlameGraphSvgTest, MergesPrefixesAndSortsChildrenDeterministically) {
  std::vector<ResolvedSample> samples = {
      Sample({User("zeta"), User("main")}), Sample({User("alpha"), User("main")}),
      Sample({User("mid"), User("main")}), Sample({User("alpha"), User("main")}, 1, "other")};
  const Svg svg = Render(samples);
  std::vector<std::string> names;
  for (const Frame& f : svg.frames) names.push_back(f.title.substr(0, f.title.find(" (")));
  EXPECT_EQ(names, (std::vector<std::string>{"all", "app", "main", "alpha", "mid", "zeta", "other",
                                             "main", "alpha"}));
  std::reverse(samples.begin(), samples.end());
  EXPECT_EQ(Render(samples).raw, svg.raw);
}

TEST(FlameGraphSvgTest, DeepStack) {
  std::vector<ResolvedFrame> frames;
  for (int i = 0; i < 500; ++i) frames.push_back(User("f" + std::to_string(i)));
  const Svg svg = Render({Sample(frames)});
  ASSERT_EQ(svg.frames.size(), 502u);                            // all, comm, 500 frames
  EXPECT_EQ(svg.frames.back().title, "f0 (1 sample, 100.00%)");  // the leaf, on top
  EXPECT_EQ(svg.frames[2].title, "f499 (1 sample, 100.00%)");
  EXPECT_NEAR(svg.frames[0].y - svg.frames.back().y, 501 * 16, 0.01);
  EXPECT_GE(svg.frames.back().y, 0);
  const double height = std::stod(svg.root->attrs.at("height"));
  EXPECT_LT(svg.frames[0].y + 16, height);
}

TEST(FlameGraphSvgTest, EmptyProfileSaysNoSamples) {
  for (const auto& samples :
       {std::vector<ResolvedSample>{}, std::vector<ResolvedSample>{Sample({User("main")}, 0)}}) {
    const Svg svg = Render(samples);
    ASSERT_NE(svg.root, nullptr);
    EXPECT_TRUE(svg.frames.empty());
    EXPECT_THAT(svg.raw, HasSubstr(">no samples</text>"));
  }
}

TEST(FlameGraphSvgTest, TinyFramesAreLeftOut) {
  std::vector<ResolvedSample> samples = {Sample({User("big"), User("main")}, 100000),
                                         Sample({User("tiny"), User("leaf"), User("main")})};
  const Svg svg = Render(samples);
  EXPECT_NE(svg.Find("big"), nullptr);
  EXPECT_EQ(svg.Find("leaf"), nullptr);  // 0.012 px
  EXPECT_EQ(svg.Find("tiny"), nullptr);
  EXPECT_EQ(svg.Find("main")->title, "main (100001 samples, 100.00%)");
  const Svg all = Render(samples, {.min_frame_width = 0});
  EXPECT_NE(all.Find("tiny"), nullptr);
  EXPECT_LT(svg.raw.size(), all.raw.size());
}

TEST(FlameGraphSvgTest, ColoursByKind) {
  const Svg svg = Render({Sample({Kernel("k"), Inlined("i"), User("u"),
                                  ResolvedFrame{0x10, "[unknown]", "/lib/libz.so.1", false, false},
                                  ResolvedFrame{0x10, "", "[unknown]", false, false}})});
  ASSERT_TRUE(svg.Find("k") && svg.Find("i") && svg.Find("u") && svg.Find("[libz.so.1]") &&
              svg.Find("[unknown]"));
  const Rgb k = ParseRgb(svg.Find("k")->fill), i = ParseRgb(svg.Find("i")->fill),
            u = ParseRgb(svg.Find("u")->fill), z = ParseRgb(svg.Find("[libz.so.1]")->fill),
            n = ParseRgb(svg.Find("[unknown]")->fill);
  EXPECT_GT(k.b, k.r);  // kernel: blue
  EXPECT_GT(i.g, i.r);  // inlined: green
  EXPECT_GT(i.g, i.b);
  EXPECT_GT(u.r, u.b);  // user: warm
  EXPECT_GT(u.r, 150);
  // A library's code: warm too, but yellower than the executable's.
  const Rgb l = ParseRgb(Render({Sample({Lib("memcpy")})}).Find("memcpy")->fill);
  EXPECT_GT(l.r, l.b);
  EXPECT_GT(l.g * u.r, u.g * l.r);
  EXPECT_EQ(z.r, z.g);  // unknown: grey
  EXPECT_EQ(z.g, z.b);
  EXPECT_EQ(n.r, n.b);
}

TEST(FlameGraphSvgTest, LabelsTruncatedToFit) {
  const std::string long_name(300, 'x');
  const Svg svg =
      Render({Sample({User(long_name), User("main")}), Sample({User("short"), User("main")}, 2)},
             {.width = 600});
  const Frame* f = svg.Find(long_name);
  ASSERT_NE(f, nullptr);
  EXPECT_THAT(f->label, ::testing::EndsWith(".."));
  EXPECT_LT(f->label.size(), long_name.size());
  EXPECT_LE(f->label.size() * 12 * 0.6, f->width);  // monospace 12px, ~0.6 em a character
  EXPECT_EQ(svg.Find("short")->label, "short");

  // 580 px / 18 samples: room for 3 characters. A short name fits whole; a
  // longer one is left blank rather than shown as "a..".
  const Svg narrow =
      Render({Sample({User("abc")}), Sample({User("abcdef")}), Sample({User("wide")}, 16)},
             {.width = 600});
  EXPECT_EQ(narrow.Find("abc")->label, "abc");
  EXPECT_EQ(narrow.Find("abcdef")->label, "");
}

TEST(FlameGraphSvgTest, SelfContainedWithScript) {
  const Svg svg = Render({Sample({User("main")})});
  const XmlNode* script = Child(*svg.root, "script");
  ASSERT_NE(script, nullptr);
  EXPECT_THAT(script->text, HasSubstr("data-ehprof-ready"));
  EXPECT_THAT(svg.raw, HasSubstr("<![CDATA["));
  EXPECT_THAT(svg.raw, Not(HasSubstr("href")));
  EXPECT_THAT(svg.raw, Not(HasSubstr("<!DOCTYPE")));
  // The only URL is the SVG namespace.
  size_t urls = 0;
  for (size_t p = svg.raw.find("http"); p != std::string::npos; p = svg.raw.find("http", p + 1))
    ++urls;
  EXPECT_EQ(urls, 1u);
  EXPECT_NE(FindById(*svg.root, "search"), nullptr);
  EXPECT_NE(FindById(*svg.root, "unzoom"), nullptr);
}

TEST(FlameGraphSvgTest, RejectsBadOptions) {
  std::ostringstream out;
  EXPECT_EQ(WriteFlameGraphSvg(std::vector<ResolvedSample>{}, out, {.width = 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteFlameGraphSvg(std::vector<ResolvedSample>{}, out, {.width = NAN}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteFlameGraphSvg(std::vector<ResolvedSample>{}, out, {.min_frame_width = -1}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FlameGraphSvgTest, ReportsWriteFailure) {
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  EXPECT_EQ(WriteFlameGraphSvg({Sample({User("main")})}, out).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ehprof
