// The flame graph SVG read back for tests: a strict reader for the XML
// subset the writer emits (every element closed, attributes quoted, entities
// valid, UTF-8 valid; any deviation is a test failure, since a browser shows
// nothing at all for a malformed SVG), the frames as drawn, and samples to
// draw. Shared by tests/output_svg_test.cc and tests/output_svg_info_test.cc.
#ifndef EHPROF_TESTS_SVG_READER_H_
#define EHPROF_TESTS_SVG_READER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "agent/output/output_svg.h"
#include "agent/resolve/resolved_sample.h"

namespace ehprof::svg_test {

struct XmlNode {
  std::string tag;
  std::map<std::string, std::string> attrs;  // entities decoded
  std::string text;                          // character data directly inside, decoded
  std::vector<std::unique_ptr<XmlNode>> children;
  const XmlNode* parent = nullptr;
};

// nullptr, with *error set, when `doc` is not well-formed.
std::unique_ptr<XmlNode> ParseXml(const std::string& doc, std::string* error);
const XmlNode* FindById(const XmlNode& node, const std::string& id);
const XmlNode* Child(const XmlNode& node, const std::string& tag);

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

// Writes `samples` and reads the file back, failing the test on a malformed
// one.
Svg Render(const std::vector<ResolvedSample>& samples, const FlameGraphOptions& options = {});

// Frames of /bin/app, the kernel, libc, and inlined in /bin/app.
ResolvedFrame User(std::string symbol);
ResolvedFrame Kernel(std::string symbol);
ResolvedFrame Lib(std::string symbol);
ResolvedFrame Inlined(std::string symbol);
// `frames` leaf first, as ResolvedSample holds them; pid and tid 42.
ResolvedSample Sample(std::vector<ResolvedFrame> frames, uint64_t count = 1,
                      std::string comm = "app");

struct Rgb {
  int r, g, b;
};
Rgb ParseRgb(const std::string& fill);

}  // namespace ehprof::svg_test

#endif  // EHPROF_TESTS_SVG_READER_H_
