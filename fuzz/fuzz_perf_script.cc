// libFuzzer target: text through ReadPerfScript (agent/output/perf_script_reader.h),
// then back out through WritePerfScript (agent/output/output_perf_script.h).
//
// Input: a perf-script dump. Seeds: testdata/seeds/perf_script.
// Checks: errors name the input; each frame line is "<hex> <symbol> (<dso>)"
// split the way the reader's comment describes; and the samples the writer
// can print faithfully read back equal.
#include <cstddef>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "agent/output/output_perf_script.h"
#include "agent/output/perf_script_reader.h"
#include "base/printable_text.h"

namespace {

using ehprof::ResolvedFrame;
using ehprof::ResolvedSample;

// Frame lines as ReadPerfScript classifies them, in input order (it only
// succeeds if every one became a frame).
std::vector<std::string> FrameLines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    if (line[0] == '\t' || line[0] == ' ') out.push_back(line);
  }
  return out;
}

// The line, less trailing blanks, is the address token, one space, the
// symbol, " (", the dso, ")": nothing of the line is dropped or read twice.
bool FrameMatchesLine(const ResolvedFrame& f, std::string_view line) {
  line = line.substr(0, line.find_last_not_of(" \r") + 1);
  line.remove_prefix(line.find_first_not_of(" \t"));
  // An empty symbol reads from "ADDR (DSO)" (perf script -F ip,dso) and
  // from "ADDR  (DSO)" (an empty symbol between the two spaces).
  std::vector<std::string> tails = {" " + f.symbol + " (" + f.dso + ")"};
  if (f.symbol.empty()) tails.push_back(" (" + f.dso + ")");
  for (const std::string& tail : tails) {
    if (line.size() <= tail.size() || line.substr(line.size() - tail.size()) != tail) continue;
    // The address token itself must hold no space: the symbol starts after
    // the first one.
    if (line.substr(0, line.size() - tail.size()).find(' ') == std::string_view::npos) return true;
  }
  return false;
}

// Samples the writer prints as they were read. It deliberately departs
// from the text for three kinds (output_perf_script.h): a name that is not
// printable UTF-8 (a '\r', any control byte, invalid UTF-8) is escaped as
// the profile interns it (PrintableText), an empty symbol or dso becomes
// "[unknown]", and the tid is
// printed signed ("%5d", like perf), so one above INT32_MAX reads back as
// a negative number the reader rejects. ('\n' cannot occur: the reader
// splits lines on it.)
bool Printable(const ResolvedSample& s) {
  auto clean = [](const std::string& name) {
    return !name.empty() && ehprof::IsPrintableText(name);
  };
  if (s.tid > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()) || !clean(s.comm)) {
    return false;
  }
  for (const ResolvedFrame& f : s.frames) {
    if (!clean(f.symbol) || !clean(f.dso)) return false;
  }
  return true;
}

// An inline expansion is written at the address of the frame it expands,
// as ehprof and perf print them (the profile model keeps one address per
// location): of an inlined frame the round trip keeps its name and mark;
// its address, and whether the reader takes it for a kernel frame, come
// from the frame below it, which hostile input need not agree with.
bool SameSample(const ResolvedSample& a, const ResolvedSample& b) {
  if (a.comm != b.comm || a.tid != b.tid || a.frames.size() != b.frames.size()) return false;
  for (size_t i = 0; i < a.frames.size(); ++i) {
    const ResolvedFrame& x = a.frames[i];
    const ResolvedFrame& y = b.frames[i];
    const bool placed = x.inlined || (x.addr == y.addr && x.kernel == y.kernel);
    if (!placed || x.symbol != y.symbol || x.dso != y.dso || x.inlined != y.inlined) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::istringstream in(text);
  auto first = ehprof::ReadPerfScript(in, "fuzz");
  if (!first.ok()) {
    if (first.status().message().substr(0, 5) != "fuzz:") __builtin_trap();
    return 0;
  }

  const std::vector<std::string> lines = FrameLines(text);
  size_t k = 0;
  for (const ResolvedSample& s : *first) {
    if (s.comm.empty()) __builtin_trap();
    for (const ResolvedFrame& f : s.frames) {
      if (k >= lines.size()) __builtin_trap();
      const std::string& line = lines[k++];
      if (!FrameMatchesLine(f, line)) __builtin_trap();
    }
  }
  if (k != lines.size()) __builtin_trap();

  std::vector<ResolvedSample> printable;
  for (const ResolvedSample& s : *first) {
    if (Printable(s)) printable.push_back(s);
  }
  std::ostringstream out;
  if (!ehprof::WritePerfScript(printable, out).ok()) __builtin_trap();
  std::istringstream back_in(out.str());
  auto second = ehprof::ReadPerfScript(back_in, "fuzz.out");
  if (!second.ok() || second->size() != printable.size()) __builtin_trap();
  for (size_t i = 0; i < printable.size(); ++i) {
    if (!SameSample(printable[i], (*second)[i])) __builtin_trap();
  }
  return 0;
}
