// libFuzzer target: bytes through both CPython line-table decoders
// (agent/python/line_table.h), which read co_linetable from another
// process. Input: byte 0 picks the format (even: PEP 657, odd: PEP 626),
// the rest is the table. Seeds: testdata/seeds/line_table (tables of real
// code objects). Checks: ranges are in order and never overlap, and LineAt
// of every range's start gives that range's line.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "agent/python/line_table.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const std::span<const uint8_t> table(data + 1, size - 1);
  const auto ranges = (data[0] & 1) ? ehprof::DecodePep626(table, 1) : ehprof::DecodePep657(table, 1);
  for (size_t i = 0; i < ranges.size(); ++i) {
    if (ranges[i].start >= ranges[i].end) std::abort();
    if (i > 0 && ranges[i - 1].end > ranges[i].start) std::abort();
    if (ehprof::LineAt(ranges, ranges[i].start) != ranges[i].line) std::abort();
  }
  return 0;
}
