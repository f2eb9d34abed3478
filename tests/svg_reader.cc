#include "tests/svg_reader.h"

#include <cctype>
#include <cstdio>
#include <sstream>
#include <utility>

#include "gtest/gtest.h"

namespace ehprof::svg_test {
namespace {

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

}  // namespace

std::unique_ptr<XmlNode> ParseXml(const std::string& doc, std::string* error) {
  XmlReader reader(doc);
  std::unique_ptr<XmlNode> root = reader.Parse();
  if (!root) *error = reader.error();
  return root;
}

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

Svg Render(const std::vector<ResolvedSample>& samples, const FlameGraphOptions& options) {
  Svg svg;
  std::ostringstream out;
  const absl::Status status = WriteFlameGraphSvg(samples, out, options);
  EXPECT_TRUE(status.ok()) << status;
  svg.raw = out.str();
  std::string error;
  svg.root = ParseXml(svg.raw, &error);
  EXPECT_NE(svg.root, nullptr) << error;
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
ResolvedSample Sample(std::vector<ResolvedFrame> frames, uint64_t count,
                      std::string comm) {
  ResolvedSample s;
  s.comm = std::move(comm);
  s.pid = s.tid = 42;
  s.frames = std::move(frames);
  s.count = count;
  return s;
}

Rgb ParseRgb(const std::string& fill) {
  Rgb c{};
  EXPECT_EQ(sscanf(fill.c_str(), "rgb(%d,%d,%d)", &c.r, &c.g, &c.b), 3) << fill;
  return c;
}

}  // namespace ehprof::svg_test
