// CPython's line tables, decoded from the bytes of a code object's
// co_linetable: 3.10's PEP 626 (byte-offset delta, line delta pairs) and
// 3.11+'s PEP 657 location table (entries of code units with a line delta
// and columns). Pure functions over bytes a process gave us: a table that
// ends early or runs past its end yields the ranges read so far.
#ifndef EHPROF_AGENT_PYTHON_LINE_TABLE_H_
#define EHPROF_AGENT_PYTHON_LINE_TABLE_H_

#include <cstdint>
#include <span>
#include <vector>

namespace ehprof {

// Code units [start, end) (2-byte instructions) on `line`; -1: no line.
struct LineRange {
  uint32_t start = 0, end = 0;
  int32_t line = -1;
};

// 3.10: pairs of (unsigned byte-offset delta, signed line delta, -128 for
// "no line"), the line starting at co_firstlineno.
std::vector<LineRange> DecodePep626(std::span<const uint8_t> table, int32_t first_line);
// 3.11+: entries of 1-8 code units; codes 0-9 short form, 10-12 one line
// form (line delta code - 10), 13 no columns, 14 long form, 15 no location.
std::vector<LineRange> DecodePep657(std::span<const uint8_t> table, int32_t first_line);

// The line of the instruction at code unit `index`, or -1.
int32_t LineAt(const std::vector<LineRange>& ranges, uint32_t index);

}  // namespace ehprof

#endif  // EHPROF_AGENT_PYTHON_LINE_TABLE_H_
