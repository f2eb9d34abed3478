// perf-script output written with --srcline, read back for the tests that
// judge frames by name, file and line (Python's, JavaScript's): "comm tid
// [cpu] time: period event:", then per frame "\taddr symbol (dso)" and,
// when known, "  file:line" under it.
#ifndef EHPROF_TESTS_SRCLINE_PERF_SCRIPT_H_
#define EHPROF_TESTS_SRCLINE_PERF_SCRIPT_H_

#include <cstdint>
#include <string>
#include <vector>

namespace ehprof::testing {

struct SrclineFrame {
  std::string symbol, dso;  // dso "inlined": an inline expansion of the frame after it
  std::string file;         // of the "file:line" under it; empty: none printed
  int line = 0;             // 0: none printed
};
struct SrclineSample {
  uint32_t tid = 0;
  std::vector<SrclineFrame> frames;  // leaf first
};

std::vector<SrclineSample> ParseSrclinePerfScript(const std::string& text);

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_SRCLINE_PERF_SCRIPT_H_
