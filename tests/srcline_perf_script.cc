#include "tests/srcline_perf_script.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "absl/strings/str_split.h"

namespace ehprof::testing {

std::vector<SrclineSample> ParseSrclinePerfScript(const std::string& text) {
  std::vector<SrclineSample> out;
  for (absl::string_view block : absl::StrSplit(text, "\n\n", absl::SkipWhitespace())) {
    std::vector<std::string> lines = absl::StrSplit(block, '\n', absl::SkipEmpty());
    if (lines.empty()) continue;
    SrclineSample s;
    std::istringstream head(lines[0]);
    std::string comm;
    head >> comm >> s.tid;
    for (size_t i = 1; i < lines.size(); ++i) {
      const std::string& l = lines[i];
      if (l[0] == '\t') {
        SrclineFrame f;
        const size_t open = l.rfind(" ("), sym = l.find(' ', l.find_first_not_of(" \t"));
        if (open == std::string::npos || sym == std::string::npos || sym >= open) continue;
        f.symbol = l.substr(sym + 1, open - sym - 1);
        f.dso = l.substr(open + 2, l.size() - open - 3);
        s.frames.push_back(std::move(f));
      } else if (!s.frames.empty()) {
        const size_t colon = l.rfind(':');
        if (colon == std::string::npos) continue;
        const size_t from = l.find_first_not_of(' ');
        s.frames.back().file = l.substr(from, colon - std::min(from, colon));
        s.frames.back().line = std::atoi(l.c_str() + colon + 1);
      }
    }
    out.push_back(std::move(s));
  }
  return out;
}

}  // namespace ehprof::testing
