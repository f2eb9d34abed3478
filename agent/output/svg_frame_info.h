// What the flame graph says about a frame besides its name and width: its
// kind (and so its colour), where its code is (the tooltip), and the legend
// of the colours. Kept apart from the layout (output_svg.cc); internal to the
// SVG writer.
#ifndef EHPROF_AGENT_OUTPUT_SVG_FRAME_INFO_H_
#define EHPROF_AGENT_OUTPUT_SVG_FRAME_INFO_H_

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "agent/output/interned_profile.h"
#include "agent/resolve/frame_runtime_traits.h"

namespace ehprof {

// kUser is code of the executable, kLibrary of a shared object (or the
// vDSO): telling them apart by colour shows at a glance how much time goes
// to libc and friends. A runtime's frames (FrameRuntime r) have the kind
// kFirstRuntime + r - 1; frame_runtime_traits.cc says their colour and words.
enum class FrameKind { kRoot, kComm, kUser, kLibrary, kKernel, kInlined, kUnknown, kOffCpu, kFirstRuntime };
constexpr int kFrameKinds = static_cast<int>(FrameKind::kFirstRuntime) + kFrameRuntimeCount;

// The kind of a resolved frame with a symbol (not off-CPU, not unknown).
FrameKind SymbolKind(const FrameView& f);

// Where the frames merged into one box came from. Views into the profile,
// which outlive the writing. Merged frames of one function usually differ in
// line (each is the call site of a different callee), so up to kMaxLines
// lines are kept.
struct FrameOrigin {
  static constexpr size_t kMaxLines = 3;
  std::string_view dso;
  bool several_dsos = false;
  std::string_view src_file;
  bool several_files = false;
  std::vector<uint32_t> lines;  // sorted, distinct
  bool more_lines = false;
  void Add(const FrameView& f);
};

std::string FrameColor(FrameKind kind, const std::string& name);

// The <title> text, before XML escaping: "NAME (N samples, P%)" on the first
// line (the script reads name and count back from it), then what the frame
// is and, when known, file:line.
std::string FrameTooltip(const std::string& name, FrameKind kind, const FrameOrigin* origin,
                         uint64_t count, uint64_t total, bool nanoseconds);

// Rows the legend of `present` kinds needs in `width` pixels.
int LegendRows(const std::vector<bool>& present, double width, double pad);
// <g id="legend">: a swatch and a name per present kind, rows of `row_height`
// from `top`, left to right from `pad`.
void WriteLegend(std::ostream& out, const std::vector<bool>& present, double width, double pad,
                 double top, double row_height);

}  // namespace ehprof

#endif  // EHPROF_AGENT_OUTPUT_SVG_FRAME_INFO_H_
