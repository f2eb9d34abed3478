#include "agent/output/output_folded.h"

#include <cstdint>
#include <map>

#include "absl/strings/str_cat.h"
#include "base/printable_text.h"

namespace ehprof {
namespace {

std::string Sanitize(std::string_view name) {
  if (name.empty()) return "[unknown]";
  std::string s(name);
  for (char& c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == ';') {
      c = ':';
    } else if (u < 0x20 || u == 0x7f) {
      c = '?';
    }
  }
  for (size_t i = s.size(); i > 0 && s[i - 1] == ' '; --i) s[i - 1] = '_';
  return s;
}

std::string FoldedComm(std::string_view comm) {
  std::string s = Sanitize(comm);
  // Both stackcollapse scripts do this, so the comm stays one token.
  for (char& c : s) {
    if (c == ' ') c = '_';
  }
  return s;
}

}  // namespace

std::string FoldedFrameName(const FrameView& frame, const FoldedOptions& options) {
  std::string name = Sanitize(frame.symbol);
  if (options.srcline && !frame.src_file.empty()) {
    name = Sanitize(absl::StrCat(std::string(frame.symbol), " (", std::string(frame.src_file), ":", frame.line, ")"));
  }
  // An unsymbolized frame still names its file, as FlameGraph's
  // stackcollapse-perf.pl does: "[libc.so.6]" says more than "[unknown]".
  if (name == "[unknown]" && !frame.dso.empty() && frame.dso != "[unknown]") {
    const size_t slash = frame.dso.rfind('/');
    std::string base(slash == std::string::npos ? frame.dso : frame.dso.substr(slash + 1));
    if (base.empty() || base.front() != '[') base = absl::StrCat("[", base, "]");
    name = Sanitize(base);
  }
  if (!options.annotate) return name;
  if (frame.inlined) return absl::StrCat(name, "_[i]");
  if (frame.jit) return absl::StrCat(name, "_[j]");
  if (frame.kernel) return absl::StrCat(name, "_[k]");
  return name;
}

namespace {

// "comm;root;...;leaf" of a comm and leaf-first frames.
std::string FoldedLine(std::string_view comm, const std::vector<FrameView>& frames, const FoldedOptions& options) {
  std::string key = FoldedComm(comm);
  for (auto it = frames.rbegin(); it != frames.rend(); ++it) {
    absl::StrAppend(&key, ";", FoldedFrameName(*it, options));
  }
  return key;
}

}  // namespace

std::string FoldedStack(const ResolvedSample& sample, const FoldedOptions& options) {
  // Not through a ProfileBuilder: printable here as ProfileBuilder::String
  // makes every string of a profile.
  return PrintableText(FoldedLine(sample.comm, std::vector<FrameView>(sample.frames.begin(), sample.frames.end()), options));
}

absl::Status WriteFolded(const std::vector<ResolvedSample>& samples, std::ostream& out,
                         const FoldedOptions& options) {
  return WriteFolded(BuildProfile(samples), out, options);
}

absl::Status WriteFolded(const InternedProfile& profile, std::ostream& out, const FoldedOptions& options) {
  // std::map: the lines come out sorted, so equal profiles give equal files.
  std::map<std::string, uint64_t> stacks;
  for (const InternedProfile::Sample& sample : profile.samples) {
    if (sample.count == 0) continue;
    stacks[FoldedLine(profile.strings[sample.comm], Frames(profile, sample), options)] += SampleValue(sample);
  }
  for (const auto& [stack, count] : stacks) {
    out << stack << ' ' << count << '\n';
    if (!out) break;
  }
  out.flush();
  if (!out) return absl::DataLossError("folded output: write failed");
  return absl::OkStatus();
}

}  // namespace ehprof
