// The flame graph SVG writer: parsed back with a small strict XML reader
// (every element closed, attributes quoted, entities valid, UTF-8 valid), then
// checked frame by frame: geometry, tooltips, order, escaping, colours.
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

namespace ehprof {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

// ---------------------------------------------------------------------------
// A strict reader for the XML subset the writer emits. Any deviation is a
// test failure, since a browser shows nothing at all for a malformed SVG.

struct XmlNode {
  std::string tag;
  std::map<std::string, std::string> attrs;  // entities decoded
  std::string text;                          // character data directly inside, decoded
  std::vector<std::unique_ptr<XmlNode>> children;
  const XmlNode* parent = nullptr;
};

class XmlReader {
 public:
  explicit XmlReader(const std::string& doc) : s_(doc) {}

  // nullptr (with error()) when the document is not well-formed.
  std::unique_ptr<XmlNode> Parse() {
    if (!ValidUtf8()) return Fail("invalid UTF-8");
    const std::string decl = "<?xml version=\"1.0\" encoding=\"UTF-8\"";
    if (s_.compare(0, decl.size(), decl) != 0) return Fail("no XML declaration");
    pos_ = s_.find("?>");
    if (pos_ == std::string::npos) return Fail("unterminated declaration");
    pos_ += 2;
    SkipSpace();
    auto root = std::make_unique<XmlNode>();
    if (!Element(root.get())) return nullptr;
    SkipSpace();
    if (pos_ != s_.size()) return Fail("content after the root element");
    return root;
  }
  const std::string& error() const { return error_; }

 private:
  std::unique_ptr<XmlNode> Fail(const std::string& why) {
    if (error_.empty()) error_ = why + " at byte " + std::to_string(pos_);
    return nullptr;
  }
  bool Bad(const std::string& why) {
    Fail(why);
    return false;
  }
  void SkipSpace() {
    while (pos_ < s_.size() && isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool ValidUtf8() const {
    for (size_t i = 0; i < s_.size();) {
      const auto b = static_cast<unsigned char>(s_[i]);
      const int len = b < 0x80         ? 1
                      : (b >> 5) == 6  ? 2
                      : (b >> 4) == 14 ? 3
                      : (b >> 3) == 30 ? 4
                                       : 0;
      if (len == 0 || i + len > s_.size()) return false;
      for (int k = 1; k < len; ++k) {
        if ((static_cast<unsigned char>(s_[i + k]) & 0xc0) != 0x80) return false;
      }
      if (len == 1 && b < 0x20 && b != '\n' && b != '\t' && b != '\r') return false;
      i += len;
    }
    return true;
  }
  std::string Name() {
    const size_t start = pos_;
    while (pos_ < s_.size() && (isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '-' ||
                                s_[pos_] == ':' || s_[pos_] == '_')) {
      ++pos_;
    }
    return s_.substr(start, pos_ - start);
  }
  // Decodes character data up to `end`; false on a raw '<' or a bad entity.
  bool Decode(size_t end, std::string* out) {
    static const std::map<std::string, std::string> kEntities = {
        {"amp", "&"}, {"lt", "<"}, {"gt", ">"}, {"quot", "\""}, {"apos", "'"}};
    for (size_t i = pos_; i < end; ++i) {
      if (s_[i] == '<') return Bad("raw '<' in character data");
      if (s_[i] != '&') {
        *out += s_[i];
        continue;
      }
      const size_t semi = s_.find(';', i);
      if (semi == std::string::npos || semi > end) return Bad("unterminated entity");
      auto it = kEntities.find(s_.substr(i + 1, semi - i - 1));
      if (it == kEntities.end()) return Bad("unknown entity " + s_.substr(i, semi - i + 1));
      *out += it->second;
      i = semi;
    }
    pos_ = end;
    return true;
  }
  bool Element(XmlNode* node) {
    if (s_[pos_] != '<') return Bad("expected '<'");
    ++pos_;
    node->tag = Name();
    if (node->tag.empty()) return Bad("empty tag name");
    for (;;) {
      SkipSpace();
      if (s_.compare(pos_, 2, "/>") == 0) {
        pos_ += 2;
        return true;
      }
      if (s_[pos_] == '>') {
        ++pos_;
        break;
      }
      const std::string attr = Name();
      if (attr.empty() || s_.compare(pos_, 2, "=\"") != 0) return Bad("bad attribute");
      pos_ += 2;
      const size_t close = s_.find('"', pos_);
      if (close == std::string::npos) return Bad("unterminated attribute");
      std::string value;
      if (!Decode(close, &value)) return false;
      ++pos_;
      if (!node->attrs.emplace(attr, value).second) return Bad("duplicate attribute " + attr);
    }
    for (;;) {
      if (pos_ >= s_.size()) return Bad("unclosed <" + node->tag + ">");
      if (s_.compare(pos_, 9, "<![CDATA[") == 0) {
        const size_t end = s_.find("]]>", pos_);
        if (end == std::string::npos) return Bad("unterminated CDATA");
        node->text += s_.substr(pos_ + 9, end - pos_ - 9);
        pos_ = end + 3;
      } else if (s_.compare(pos_, 2, "</") == 0) {
        pos_ += 2;
        if (Name() != node->tag || s_[pos_] != '>')
          return Bad("mismatched </...> for " + node->tag);
        ++pos_;
        return true;
      } else if (s_[pos_] == '<') {
        auto child = std::make_unique<XmlNode>();
        child->parent = node;
        if (!Element(child.get())) return false;
        node->children.push_back(std::move(child));
      } else {
        size_t end = s_.find('<', pos_);
        if (end == std::string::npos) end = s_.size();
        if (!Decode(end, &node->text)) return false;
      }
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
  std::string error_;
};

const XmlNode* FindById(const XmlNode& node, const std::string& id) {
  auto it = node.attrs.find("id");
  if (it != node.attrs.end() && it->second == id) return &node;
  for (const auto& c : node.children) {
    if (const XmlNode* found = FindById(*c, id)) return found;
  }
  return nullptr;
}

const XmlNode* Child(const XmlNode& node, const std::string& tag) {
  for (const auto& c : node.children) {
    if (c->tag == tag) return c.get();
  }
  return nullptr;
}

// One drawn frame, read back from its <g>.
struct Frame {
  std::string title;  // the tooltip's first line: "NAME (N samples, P%)"
  std::string tip;    // all of it
  std::string label;
  std::string fill;
  double x = 0, y = 0, width = 0;
};

struct Svg {
  std::string raw;
  std::unique_ptr<XmlNode> root;
  std::vector<Frame> frames;  // document order
  const Frame* Find(const std::string& name) const {
    for (const Frame& f : frames) {
      if (f.title.rfind(name + " (", 0) == 0) return &f;
    }
    return nullptr;
  }
};

Svg Render(const std::vector<ResolvedSample>& samples, const FlameGraphOptions& options = {}) {
  Svg svg;
  std::ostringstream out;
  const absl::Status status = WriteFlameGraphSvg(samples, out, options);
  EXPECT_TRUE(status.ok()) << status;
  svg.raw = out.str();
  XmlReader reader(svg.raw);
  svg.root = reader.Parse();
  EXPECT_NE(svg.root, nullptr) << reader.error();
  if (!svg.root) return svg;
  EXPECT_EQ(svg.root->tag, "svg");
  EXPECT_EQ(svg.root->attrs["xmlns"], "http://www.w3.org/2000/svg");
  const XmlNode* frames = FindById(*svg.root, "frames");
  EXPECT_NE(frames, nullptr);
  if (!frames) return svg;
  for (const auto& g : frames->children) {
    EXPECT_EQ(g->tag, "g");
    const XmlNode* title = Child(*g, "title");
    const XmlNode* rect = Child(*g, "rect");
    const XmlNode* text = Child(*g, "text");
    EXPECT_TRUE(title && rect && text) << "frame without title, rect or text";
    if (!title || !rect || !text) continue;
    Frame f;
    f.tip = title->text;
    f.title = f.tip.substr(0, f.tip.find('\n'));
    f.label = text->text;
    f.fill = rect->attrs.at("fill");
    f.x = std::stod(rect->attrs.at("x"));
    f.y = std::stod(rect->attrs.at("y"));
    f.width = std::stod(rect->attrs.at("width"));
    svg.frames.push_back(f);
  }
  return svg;
}

ResolvedFrame User(std::string symbol) {
  return {0x1000, std::move(symbol), "/bin/app", false, false};
}
ResolvedFrame Kernel(std::string symbol) {
  return {0xffffffff81000000, std::move(symbol), "[kernel.kallsyms]", true, false};
}
ResolvedFrame Lib(std::string symbol) {
  return {0x1000, std::move(symbol), "/lib/x86_64-linux-gnu/libc.so.6", false, false};
}
ResolvedFrame Inlined(std::string symbol) {
  return {0x1000, std::move(symbol), "/bin/app", false, true};
}

// `frames` leaf first, as ResolvedSample holds them.
ResolvedSample Sample(std::vector<ResolvedFrame> frames, uint64_t count = 1,
                      std::string comm = "app") {
  ResolvedSample s;
  s.comm = std::move(comm);
  s.pid = s.tid = 42;
  s.frames = std::move(frames);
  s.count = count;
  return s;
}

struct Rgb {
  int r, g, b;
};
Rgb ParseRgb(const std::string& fill) {
  Rgb c{};
  EXPECT_EQ(sscanf(fill.c_str(), "rgb(%d,%d,%d)", &c.r, &c.g, &c.b), 3) << fill;
  return c;
}

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

TEST(FlameGraphSvgTest, InvalidUtf8AndControlCharactersBecomeQuestionMarks) {
  const Svg svg = Render({Sample({User("bad\xff\xc3z"), User("tab\there"), User("caf\xc3\xa9")})});
  ASSERT_NE(svg.root, nullptr);  // the reader rejects invalid UTF-8 and control characters
  EXPECT_NE(svg.Find("bad??z"), nullptr);
  EXPECT_NE(svg.Find("tab?here"), nullptr);
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

ResolvedFrame At(ResolvedFrame f, std::string file, uint32_t line) {
  f.src_file = std::move(file);
  f.line = line;
  return f;
}

TEST(FlameGraphSvgTest, TooltipsSayKindFileAndLine) {
  const Svg svg = Render({Sample({Kernel("k"), Lib("write"), At(Inlined("i"), "app.cc", 7),
                                  At(User("u"), "app.cc", 12), User("main")}),
                          Sample({ResolvedFrame{0x10, "[unknown]", "/lib/libz.so.1", false, false},
                                  At(User("u"), "app.cc", 15), User("main")})});
  EXPECT_EQ(svg.Find("k")->tip, "k (1 sample, 50.00%)\nkernel");
  EXPECT_EQ(svg.Find("write")->tip,
            "write (1 sample, 50.00%)\nlibrary code in /lib/x86_64-linux-gnu/libc.so.6");
  EXPECT_EQ(svg.Find("i")->tip, "i (1 sample, 50.00%)\ninlined into the frame below in /bin/app\napp.cc:7");
  // Merged from two call sites: both lines.
  EXPECT_EQ(svg.Find("u")->tip, "u (2 samples, 100.00%)\nuser code in /bin/app\napp.cc:12, 15");
  EXPECT_EQ(svg.Find("main")->tip, "main (2 samples, 100.00%)\nuser code in /bin/app");
  EXPECT_EQ(svg.Find("[libz.so.1]")->tip,
            "[libz.so.1] (1 sample, 50.00%)\nunresolved (no symbol) in /lib/libz.so.1");
  EXPECT_EQ(svg.Find("app")->tip, "app (2 samples, 100.00%)\ncommand name (comm)");
  EXPECT_EQ(svg.frames[0].tip, "all (2 samples, 100.00%)");
}

TEST(FlameGraphSvgTest, TooltipLinesAreCappedAndFilesCleaned) {
  std::vector<ResolvedSample> samples;
  for (uint32_t line : {40, 10, 30, 20, 10}) {
    samples.push_back(Sample({At(User("f" + std::to_string(line)), "a.cc", 1),
                              At(User("main"), "m\x01.cc", line)}));
  }
  const Svg svg = Render(samples);
  EXPECT_EQ(svg.Find("main")->tip, "main (5 samples, 100.00%)\nuser code in /bin/app\nm?.cc:10, 20, 30, ...");
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

TEST(FlameGraphSvgTest, LegendNamesTheKindsDrawnAboveTheFrames) {
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

TEST(FlameGraphSvgTest, LegendWrapsInANarrowImage) {
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

TEST(FlameGraphSvgTest, DetailsUnderTheTitle) {
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

TEST(FlameGraphSvgTest, DetailsText) {
  EXPECT_EQ(FlameGraphDetails("fio --name=x", 999, 2.5, int64_t{1764000000} * 1000000000),
            "fio --name=x | 999 Hz | 2.50 s | 2025-11-24 16:00:00 UTC");
  EXPECT_EQ(FlameGraphDetails("", 0, 0, 0), "");
  EXPECT_EQ(FlameGraphDetails("-p 12", 0, 1, 0), "-p 12 | 1.00 s");
  EXPECT_EQ(FlameGraphDetails(std::string(150, 'c'), 99, 0, 0), std::string(100, 'c') + "... | 99 Hz");
}

TEST(FlameGraphSvgTest, SearchHelpInTheFile) {
  const Svg svg = Render({Sample({User("main")})});
  const XmlNode* help = FindById(*svg.root, "help");
  ASSERT_NE(help, nullptr);
  EXPECT_THAT(help->text, HasSubstr("as written"));
  EXPECT_THAT(help->text, HasSubstr("/REGEX/"));
}

TEST(FlameGraphSvgTest, RejectsBadOptions) {
  std::ostringstream out;
  EXPECT_EQ(WriteFlameGraphSvg({}, out, {.width = 0}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteFlameGraphSvg({}, out, {.width = NAN}).code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(WriteFlameGraphSvg({}, out, {.min_frame_width = -1}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(FlameGraphSvgTest, ReportsWriteFailure) {
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  EXPECT_EQ(WriteFlameGraphSvg({Sample({User("main")})}, out).code(), absl::StatusCode::kDataLoss);
}

}  // namespace
}  // namespace ehprof
