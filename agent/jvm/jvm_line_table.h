// HotSpot's compressed line number table (the one a ConstMethod carries
// after its bytecodes, CompressedLineNumberReadStream): pairs of (bci,
// line) as deltas. A byte 0 ends it; 0xff is followed by two signed
// UNSIGNED5 numbers (the bci delta, the line delta); any other byte b adds
// b >> 3 to the bci and b & 7 to the line.
#ifndef EHPROF_AGENT_JVM_JVM_LINE_TABLE_H_
#define EHPROF_AGENT_JVM_JVM_LINE_TABLE_H_

#include <cstdint>
#include <span>
#include <vector>

#include "absl/status/statusor.h"

namespace ehprof {

struct JvmLine {
  uint32_t bci = 0;
  int32_t line = 0;
};

// Bounds on a table: a method's bytecode is under 64 KiB, and so is the
// class file's table for it.
inline constexpr size_t kMaxJvmLines = 65536;

// Decodes bytes up to the terminating 0. unsigned5_x: UNSIGNED5's excluded
// byte count, 1 from JDK 20 (MethodFields::unsigned5_x), 0 before. An
// error for a table that runs past `bytes` without its 0, holds a byte 0
// inside a number where x is 1, or grows past kMaxJvmLines.
absl::StatusOr<std::vector<JvmLine>> DecodeJvmLineTable(std::span<const uint8_t> bytes, int unsigned5_x);

// The line of bci as HotSpot says it (Method::line_number_from_bci): the
// pair of that bci, else the one of the greatest bci below it; -1 when
// none is.
int32_t JvmLineAt(const std::vector<JvmLine>& lines, uint32_t bci);

}  // namespace ehprof

#endif  // EHPROF_AGENT_JVM_JVM_LINE_TABLE_H_
