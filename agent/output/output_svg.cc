#include "agent/output/wall_view.h"
#include "agent/output/output_svg.h"
#include "agent/output/svg_frame_info.h"
#include "agent/output/svg_script.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace ehprof {
namespace {

// Geometry, shared with the script (ScriptConstants) so a zoomed label is
// cut the same way as the first one.
constexpr double kPad = 10;     // left and right margin
constexpr double kTitleRow = 32;  // title and buttons above the frames
constexpr double kDetailsRow = 18;
constexpr double kLegendRow = 18;
constexpr double kBottom = 28;  // hover details and search result below
constexpr double kFrameHeight = 16;
constexpr double kFontSize = 12;
// Labels use the monospace font so their width is known without measuring:
// DejaVu Sans Mono (Debian's monospace) advances 0.602 em, plus a margin for
// other fonts.
constexpr double kCharWidth = kFontSize * 0.62;

// Children are keyed by kind too: an inlined "foo" and a real "foo" are
// different frames. Looked up by view, so the common case allocates nothing.
struct KeyView {
  std::string_view name;
  FrameKind kind;
};
struct ChildKey {
  std::string name;
  FrameKind kind;
};
struct KeyLess {
  using is_transparent = void;
  template <typename A, typename B>
  bool operator()(const A& a, const B& b) const {
    const int c = std::string_view(a.name).compare(std::string_view(b.name));
    return c != 0 ? c < 0 : a.kind < b.kind;
  }
};

struct Node {
  std::string name;
  FrameKind kind = FrameKind::kRoot;
  uint64_t count = 0;
  FrameOrigin origin;
  std::map<ChildKey, std::unique_ptr<Node>, KeyLess> children;
};

// A frame placed on the image, in pre-order: the script rebuilds the tree
// from this order and the depths.
struct Box {
  const Node* node;
  int depth;
  uint64_t offset;  // samples left of it
};

// Valid UTF-8 without control characters, or the file is not XML at all.
std::string CleanText(const std::string& in) {
  std::string out;
  out.reserve(in.size());
  size_t i = 0;
  while (i < in.size()) {
    const auto b = static_cast<unsigned char>(in[i]);
    if (b < 0x80) {
      out += (b < 0x20 || b == 0x7f) ? '?' : static_cast<char>(b);
      ++i;
      continue;
    }
    int len = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 0;
    uint32_t cp = len == 4 ? (b & 0x07) : len == 3 ? (b & 0x0f) : (b & 0x1f);
    bool ok = len != 0 && b < 0xf5 && i + len <= in.size();
    for (int k = 1; ok && k < len; ++k) {
      const auto c = static_cast<unsigned char>(in[i + k]);
      ok = (c & 0xc0) == 0x80;
      cp = (cp << 6) | (c & 0x3f);
    }
    const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
    ok = ok && cp >= min && cp <= 0x10ffff && !(cp >= 0xd800 && cp <= 0xdfff) && cp != 0xfffe &&
         cp != 0xffff && !(cp >= 0x80 && cp < 0xa0);
    if (ok) {
      out.append(in, i, len);
      i += len;
    } else {
      out += '?';
      ++i;
    }
  }
  return out;
}

// XML's five predefined entities: enough for text and attribute values.
const char* Entity(char c) {
  switch (c) {
    case '&':
      return "&amp;";
    case '<':
      return "&lt;";
    case '>':
      return "&gt;";
    case '"':
      return "&quot;";
    case '\'':
      return "&apos;";
  }
  return nullptr;
}

std::string XmlEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    const char* entity = Entity(c);
    if (entity) {
      out += entity;
    } else {
      out += c;
    }
  }
  return out;
}

// Coordinates with two decimals and no trailing zeros: smaller files.
std::string Num(double v) {
  std::string s = absl::StrFormat("%.2f", v);
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

size_t CodePoints(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
  return n;
}

// The label that fits `width` pixels: the name, or at least two of its
// characters and "..", or nothing. Cut between code points, as the script's
// Array.from does.
std::string FitLabel(const std::string& name, double width) {
  const double fit = std::floor((width - 6) / kCharWidth);
  if (fit < 1) return "";
  const auto chars = static_cast<size_t>(fit);
  if (CodePoints(name) <= chars) return name;
  if (chars < 4) return "";
  size_t keep = chars - 2, i = 0;
  for (; i < name.size() && keep > 0; ++i) {
    if (i + 1 == name.size() || (static_cast<unsigned char>(name[i + 1]) & 0xc0) != 0x80) --keep;
  }
  return absl::StrCat(name.substr(0, i), "..");
}

std::string_view Basename(std::string_view path) {
  const size_t slash = path.rfind('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// Names of printable ASCII, nearly all of them, are used as they are.
std::string_view CleanName(std::string_view raw, std::string* scratch) {
  bool plain = !raw.empty();
  for (char c : raw) plain = plain && c >= 0x20 && c < 0x7f;
  if (plain) return raw;
  *scratch = raw.empty() ? "[unknown]" : CleanText(std::string(raw));
  return *scratch;
}

KeyView FrameKey(const FrameView& f, std::string* scratch) {
  if (f.symbol.empty() || f.symbol == "[unknown]") {
    // Which file it was in is still worth seeing (and merging on).
    if (f.dso.empty() || f.dso == "[unknown]") return {"[unknown]", FrameKind::kUnknown};
    *scratch = CleanText(absl::StrCat("[", std::string(Basename(f.dso)), "]"));
    return {*scratch, FrameKind::kUnknown};
  }
  if (f.dso == kOffCpuFrame) return {kOffCpuFrame, FrameKind::kOffCpu};
  return {CleanName(f.symbol, scratch), SymbolKind(f)};
}

Node* Child(Node* parent, KeyView key) {
  auto it = parent->children.find(key);
  if (it != parent->children.end()) return it->second.get();
  auto node = std::make_unique<Node>();
  node->name = std::string(key.name);
  node->kind = key.kind;
  Node* raw = node.get();
  parent->children.emplace(ChildKey{node->name, key.kind}, std::move(node));
  return raw;
}

void AddSample(Node* root, const InternedProfile& p, const InternedProfile::Sample& sample) {
  std::string scratch;
  const uint64_t value = SampleValue(sample);
  root->count += value;
  Node* node = Child(root, {CleanName(p.strings[sample.comm], &scratch), FrameKind::kComm});
  node->count += value;
  const std::vector<FrameView> frames = Frames(p, sample);
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    node = Child(node, FrameKey(*it, &scratch));
    node->count += value;
    if (node->kind != FrameKind::kOffCpu) node->origin.Add(*it);
  }
}

// Pre-order, children by name; iterative because stacks can be deep.
std::vector<Box> Layout(const Node& root, double scale, double min_width) {
  std::vector<Box> boxes;
  std::vector<Box> todo = {{&root, 0, 0}};
  while (!todo.empty()) {
    const Box box = todo.back();
    todo.pop_back();
    boxes.push_back(box);
    std::vector<Box> kids;
    uint64_t offset = box.offset;
    for (const auto& [key, child] : box.node->children) {
      // Left out frames keep their place, so the others stay proportional.
      if (child->count * scale >= min_width) kids.push_back({child.get(), box.depth + 1, offset});
      offset += child->count;
    }
    todo.insert(todo.end(), kids.rbegin(), kids.rend());
  }
  return boxes;
}

std::string ScriptConstants(double width) {
  return absl::StrFormat("\"use strict\";\nvar W = %s, PAD = %s, FH = %s, CW = %s;", Num(width),
                         Num(kPad), Num(kFrameHeight), absl::StrFormat("%.4f", kCharWidth));
}

// Above the frames: the title row, the details row when there are details,
// then the legend's rows. The frames start at `top`.
struct Header {
  double legend_top = kTitleRow;
  double top = kTitleRow;
  std::vector<bool> present;  // by FrameKind: the legend's entries
};

Header PlanHeader(const FlameGraphOptions& options, std::vector<bool> present) {
  Header h;
  h.present = std::move(present);
  if (!options.details.empty()) h.legend_top += kDetailsRow;
  h.top = h.legend_top + LegendRows(h.present, options.width, kPad) * kLegendRow + 4;
  return h;
}

void WriteHeader(std::ostream& out, const FlameGraphOptions& options, const Header& header,
                 double height) {
  const std::string w = Num(options.width), h = Num(height), mid = Num(options.width / 2);
  const std::string title = XmlEscape(CleanText(options.title));
  const std::string details = XmlEscape(CleanText(options.details));
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"" << w << "\" height=\""
      << h << "\" viewBox=\"0 0 " << w << ' ' << h << "\">\n"
      // The browser tab's title.
      << "<title>" << title << (details.empty() ? "" : " | ") << details << "</title>\n"
      << kSvgStyle << "<script type=\"text/ecmascript\"><![CDATA[\n"
      << ScriptConstants(options.width) << kSvgScript << "]]></script>\n"
      << "<rect id=\"background\" x=\"0\" y=\"0\" width=\"" << w << "\" height=\"" << h
      << "\" fill=\"#f7f7f2\"/>\n"
      << "<text id=\"title\" class=\"title\" x=\"" << mid << "\" y=\"24\""
      << " text-anchor=\"middle\">" << title << "</text>\n";
  if (!details.empty()) {
    out << "<text id=\"info\" class=\"info\" x=\"" << mid << "\" y=\"42\" text-anchor=\"middle\">"
        << details << "</text>\n";
  }
  out << "<text id=\"unzoom\" class=\"button hidden\" x=\"" << Num(kPad)
      << "\" y=\"24\">Reset zoom</text>\n"
      // Hovering the button says how to search: the help the file carries.
      << "<g><title id=\"help\">" << kSearchHelp << " Click a frame to zoom, Esc resets.</title>"
      << "<text id=\"search\" class=\"button\" x=\"" << Num(options.width - kPad)
      << "\" y=\"24\" text-anchor=\"end\">Search</text></g>\n"
      << "<text id=\"details\" x=\"" << Num(kPad) << "\" y=\"" << Num(height - 10)
      << "\"> </text>\n"
      << "<text id=\"matched\" x=\"" << Num(options.width - kPad) << "\" y=\"" << Num(height - 10)
      << "\" text-anchor=\"end\"></text>\n";
  WriteLegend(out, header.present, options.width, kPad, header.legend_top, kLegendRow);
}

void WriteFrame(std::ostream& out, const Box& box, double scale, double base_y, uint64_t total,
                bool nanoseconds) {
  const Node& n = *box.node;
  const double x = kPad + box.offset * scale, w = n.count * scale;
  const double y = base_y - box.depth * kFrameHeight;
  const bool located = n.kind != FrameKind::kRoot && n.kind != FrameKind::kComm;
  const std::string raw =
      FrameTooltip(n.name, n.kind, located ? &n.origin : nullptr, n.count, total, nanoseconds);
  // File names come from the recording: cleaned line by line like names.
  std::string tip;
  for (absl::string_view line : absl::StrSplit(raw, '\n')) {
    absl::StrAppend(&tip, tip.empty() ? "" : "\n", CleanText(std::string(line)));
  }
  out << "<g><title>" << XmlEscape(tip) << "</title><rect x=\"" << Num(x) << "\" y=\"" << Num(y)
      << "\" width=\"" << Num(w) << "\" height=\"" << Num(kFrameHeight - 1) << "\" rx=\"2\" fill=\""
      << FrameColor(n.kind, n.name) << "\"/><text x=\"" << Num(x + 3) << "\" y=\""
      << Num(y + kFontSize - 0.5) << "\">" << XmlEscape(FitLabel(n.name, w)) << "</text></g>\n";
}

}  // namespace

absl::Status WriteFlameGraphSvg(const std::vector<ResolvedSample>& samples, std::ostream& out,
                                const FlameGraphOptions& options) {
  return WriteFlameGraphSvg(BuildProfile(samples), out, options);
}

absl::Status WriteFlameGraphSvg(const InternedProfile& profile, std::ostream& out,
                                const FlameGraphOptions& options) {
  if (!std::isfinite(options.width) || options.width < 2 * kPad + 10 || options.width > 1e6) {
    return absl::InvalidArgumentError(
        absl::StrFormat("flame graph width must be 30..1000000 pixels, not %g", options.width));
  }
  if (!std::isfinite(options.min_frame_width) || options.min_frame_width < 0) {
    return absl::InvalidArgumentError("flame graph minimum frame width must be >= 0");
  }
  Node root;
  root.name = "all";
  for (const InternedProfile::Sample& sample : profile.samples) {
    if (SampleValue(sample) > 0) AddSample(&root, profile, sample);
  }

  if (root.count == 0) {
    const Header header = PlanHeader(options, std::vector<bool>(kFrameKinds, false));
    const double height = header.top + 3 * kFrameHeight + kBottom;
    WriteHeader(out, options, header, height);
    out << "<text x=\"" << Num(options.width / 2) << "\" y=\"" << Num(header.top + 2 * kFrameHeight)
        << "\" text-anchor=\"middle\">no samples</text>\n<g id=\"frames\"></g>\n</svg>\n";
  } else {
    const double scale = (options.width - 2 * kPad) / static_cast<double>(root.count);
    const std::vector<Box> boxes = Layout(root, scale, options.min_frame_width);
    int max_depth = 0;
    std::vector<bool> present(kFrameKinds, false);
    for (const Box& b : boxes) {
      max_depth = std::max(max_depth, b.depth);
      present[static_cast<int>(b.node->kind)] = true;
    }
    const Header header = PlanHeader(options, std::move(present));
    const double height = header.top + (max_depth + 1) * kFrameHeight + kBottom;
    const double base_y = height - kBottom - kFrameHeight;
    WriteHeader(out, options, header, height);
    out << "<g id=\"frames\">\n";
    for (const Box& b : boxes) WriteFrame(out, b, scale, base_y, root.count, options.nanoseconds);
    out << "</g>\n</svg>\n";
  }
  out.flush();
  if (!out) return absl::DataLossError("flame graph output: write failed");
  return absl::OkStatus();
}

}  // namespace ehprof
