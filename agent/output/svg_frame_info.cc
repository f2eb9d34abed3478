#include "agent/output/svg_frame_info.h"

#include <time.h>

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "agent/output/output_svg.h"

namespace ehprof {
namespace {

uint32_t Fnv1a(const std::string& s) {
  uint32_t h = 2166136261u;
  for (char c : s) h = (h ^ static_cast<unsigned char>(c)) * 16777619u;
  return h;
}

// A runtime's traits when `kind` is a runtime's, else nullptr.
const FrameRuntimeTraits* RuntimeTraits(FrameKind kind) {
  const int r = static_cast<int>(kind) - static_cast<int>(FrameKind::kFirstRuntime) + 1;
  return r >= 1 ? TraitsOf(static_cast<FrameRuntime>(r)) : nullptr;
}

std::string Hsl(double h, double s, double l) {
  // CSS's HSL to RGB; written out as rgb() because SVG 1.1 viewers may not
  // know hsl().
  const double c = (1 - std::fabs(2 * l - 1)) * s;
  const double hp = std::fmod(h, 360) / 60;
  const double x = c * (1 - std::fabs(std::fmod(hp, 2) - 1));
  // Per 60-degree sector of the hue circle, (r, g, b) is (c, x, 0) permuted.
  const double sectors[6][3] = {{c, x, 0}, {x, c, 0}, {0, c, x}, {0, x, c}, {x, 0, c}, {c, 0, x}};
  const double* rgb = sectors[std::clamp(static_cast<int>(hp), 0, 5)];
  const double m = l - c / 2;
  auto byte = [m](double v) { return static_cast<int>(std::lround((v + m) * 255)); };
  return absl::StrFormat("rgb(%d,%d,%d)", byte(rgb[0]), byte(rgb[1]), byte(rgb[2]));
}

// v1 and v2 in [0, 1] vary hue and lightness within the kind's range, so
// neighbours stand apart while the kind stays recognisable.
std::string KindColor(FrameKind kind, double v1, double v2) {
  switch (kind) {
    case FrameKind::kRoot:
      return Hsl(0, 0, 0.80);
    case FrameKind::kComm:
      return Hsl(265 + 25 * v1, 0.45, 0.72 + 0.08 * v2);
    case FrameKind::kUser:
      return Hsl(2 + 24 * v1, 0.85, 0.55 + 0.10 * v2);
    case FrameKind::kLibrary:
      return Hsl(34 + 18 * v1, 0.85, 0.52 + 0.10 * v2);
    case FrameKind::kKernel:
      return Hsl(195 + 25 * v1, 0.60, 0.62 + 0.10 * v2);
    case FrameKind::kOffCpu:
      // Waiting, not running: a colour no running frame has.
      return Hsl(275, 0.45, 0.60);
    case FrameKind::kInlined:
      return Hsl(95 + 40 * v1, 0.50, 0.55 + 0.10 * v2);
    case FrameKind::kUnknown:
      return Hsl(0, 0, 0.70 + 0.10 * v2);
    case FrameKind::kFirstRuntime:
      break;
  }
  if (const FrameRuntimeTraits* t = RuntimeTraits(kind)) {
    return Hsl(t->hue + t->hue_span * v1, t->saturation, t->lightness + t->lightness_span * v2);
  }
  return "gray";
}

// The legend's words; in FrameKind's order, up to the runtimes'.
constexpr std::string_view kLegendNames[] = {"all",     "comm",       "user code", "library",
                                             "kernel",  "inlined",    "unresolved", "off-CPU"};
static_assert(std::size(kLegendNames) == static_cast<size_t>(FrameKind::kFirstRuntime));

std::string_view LegendName(int kind) {
  const FrameRuntimeTraits* t = RuntimeTraits(static_cast<FrameKind>(kind));
  return t ? t->legend : kLegendNames[kind];
}

// What the tooltip's second line says a frame is.
std::string KindText(FrameKind kind, const FrameOrigin* o) {
  const std::string in = !o || o->dso.empty() ? ""
                         : o->several_dsos    ? " (in several files)"
                                              : absl::StrCat(" in ", std::string(o->dso));
  switch (kind) {
    case FrameKind::kRoot:
      return "";
    case FrameKind::kComm:
      return "command name (comm)";
    case FrameKind::kUser:
      return absl::StrCat("user code", in);
    case FrameKind::kLibrary:
      return absl::StrCat("library code", in);
    case FrameKind::kKernel:
      return "kernel";
    case FrameKind::kInlined:
      return absl::StrCat("inlined into the frame below", in);
    case FrameKind::kUnknown:
      return absl::StrCat("unresolved (no symbol)", in);
    case FrameKind::kOffCpu:
      return "off the CPU (blocked or waiting)";
    case FrameKind::kFirstRuntime:
      break;
  }
  if (const FrameRuntimeTraits* t = RuntimeTraits(kind)) return std::string(t->what);
  return "";
}

std::string SourceText(const FrameOrigin& o) {
  if (o.src_file.empty() || o.several_files) return "";
  if (o.lines.empty()) return std::string(o.src_file);
  return absl::StrCat(std::string(o.src_file), ":", absl::StrJoin(o.lines, ", "),
                      o.more_lines ? ", ..." : "");
}

// Monospace, as the labels (output_svg.cc's kCharWidth).
constexpr double kLegendCharWidth = 12 * 0.62;
constexpr double kSwatch = 11;

double ItemWidth(int kind) {
  return kSwatch + 4 + LegendName(kind).size() * kLegendCharWidth + 14;
}

}  // namespace

FrameKind SymbolKind(const FrameView& f) {
  if (f.runtime != FrameRuntime::kNone) {
    return static_cast<FrameKind>(static_cast<int>(FrameKind::kFirstRuntime) + static_cast<int>(f.runtime) - 1);
  }
  if (f.inlined) return FrameKind::kInlined;
  if (f.kernel) return FrameKind::kKernel;
  // "libc.so.6", "ld-linux-x86-64.so.2", "libfoo.so", "[vdso]".
  const std::string_view base = f.dso.substr(f.dso.rfind('/') + 1);
  const size_t so = base.find(".so");
  const bool library = base == "[vdso]" || (so != std::string_view::npos &&
                                            (so + 3 == base.size() || base[so + 3] == '.'));
  return library ? FrameKind::kLibrary : FrameKind::kUser;
}

void FrameOrigin::Add(const FrameView& f) {
  if (f.dso.empty() || f.dso == "[unknown]") {
    // Nothing to tell.
  } else if (dso.empty()) {
    dso = f.dso;
  } else if (dso != f.dso) {
    several_dsos = true;
  }
  if (f.src_file.empty()) return;
  if (src_file.empty()) {
    src_file = f.src_file;
  } else if (src_file != f.src_file) {
    several_files = true;
  }
  if (f.line == 0) return;
  auto it = std::lower_bound(lines.begin(), lines.end(), f.line);
  if (it != lines.end() && *it == f.line) return;
  // The lowest lines, whatever the order of the samples: equal profiles
  // give equal files.
  lines.insert(it, f.line);
  if (lines.size() > kMaxLines) {
    lines.pop_back();
    more_lines = true;
  }
}

std::string FrameColor(FrameKind kind, const std::string& name) {
  const uint32_t h = Fnv1a(name);
  return KindColor(kind, (h & 0xff) / 255.0, ((h >> 8) & 0xff) / 255.0);
}

std::string FrameTooltip(const std::string& name, FrameKind kind, const FrameOrigin* origin,
                         uint64_t count, uint64_t total, bool nanoseconds) {
  const double pct = 100.0 * count / total;
  std::string tip = nanoseconds ? absl::StrFormat("%s (%.1f ms, %.2f%%)", name, count / 1e6, pct)
                                : absl::StrFormat("%s (%d sample%s, %.2f%%)", name, count,
                                                  count == 1 ? "" : "s", pct);
  const std::string what = KindText(kind, origin);
  if (!what.empty()) absl::StrAppend(&tip, "\n", what);
  const std::string source = origin ? SourceText(*origin) : "";
  if (!source.empty()) absl::StrAppend(&tip, "\n", source);
  return tip;
}

int LegendRows(const std::vector<bool>& present, double width, double pad) {
  int rows = 0;
  double x = width;  // so the first item starts a row
  for (int k = 1; k < kFrameKinds; ++k) {
    if (!present[k]) continue;
    if (x + ItemWidth(k) > width - pad && x > pad) {
      ++rows;
      x = pad;
    }
    x += ItemWidth(k);
  }
  return rows;
}

void WriteLegend(std::ostream& out, const std::vector<bool>& present, double width, double pad,
                 double top, double row_height) {
  out << "<g id=\"legend\">\n";
  double x = width, y = top - row_height;
  for (int k = 1; k < kFrameKinds; ++k) {  // the root needs no explaining
    if (!present[k]) continue;
    if (x + ItemWidth(k) > width - pad && x > pad) {
      x = pad;
      y += row_height;
    }
    // The middle of the kind's range of colours.
    out << absl::StrFormat(
        "<rect class=\"swatch\" x=\"%.2f\" y=\"%.2f\" width=\"%g\" height=\"%g\" rx=\"2\" "
        "fill=\"%s\"/><text x=\"%.2f\" y=\"%.2f\">%s</text>\n",
        x, y + 2, kSwatch, kSwatch, KindColor(static_cast<FrameKind>(k), 0.5, 0.5),
        x + kSwatch + 4, y + 11.5, LegendName(k));
    x += ItemWidth(k);
  }
  out << "</g>\n";
}

std::string FlameGraphDetails(const std::string& command, uint64_t frequency_hz, double seconds,
                              int64_t start_unix_ns) {
  std::vector<std::string> parts;
  // A long command line would run off both sides of the centred title.
  constexpr size_t kMaxCommand = 100;
  if (!command.empty()) {
    parts.push_back(command.size() <= kMaxCommand
                        ? command
                        : absl::StrCat(command.substr(0, kMaxCommand), "..."));
  }
  if (frequency_hz > 0) parts.push_back(absl::StrCat(frequency_hz, " Hz"));
  if (seconds > 0) parts.push_back(absl::StrFormat("%.2f s", seconds));
  if (start_unix_ns > 0) {
    const time_t t = static_cast<time_t>(start_unix_ns / 1000000000);
    struct tm tm {};
    char date[32];
    if (gmtime_r(&t, &tm) && strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", &tm) > 0) {
      parts.push_back(date);
    }
  }
  return absl::StrJoin(parts, " | ");
}

}  // namespace ehprof
