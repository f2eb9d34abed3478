#include "agent/jvm/jvm_line_table.h"

#include "absl/strings/str_cat.h"
#include "agent/jvm/unsigned5.h"

namespace ehprof {

absl::StatusOr<std::vector<JvmLine>> DecodeJvmLineTable(std::span<const uint8_t> bytes, int unsigned5_x) {
  Unsigned5 in(bytes, unsigned5_x);
  std::vector<JvmLine> out;
  uint32_t bci = 0;
  int32_t line = 0;
  for (;;) {
    uint8_t b = 0;
    if (!in.Byte(&b)) return absl::InvalidArgumentError("line table: no end");
    if (b == 0) return out;
    if (out.size() >= kMaxJvmLines) return absl::InvalidArgumentError(absl::StrCat("line table: over ", kMaxJvmLines, " lines"));
    if (b == 0xff) {
      int32_t dbci = 0, dline = 0;
      if (!in.Signed(&dbci) || !in.Signed(&dline)) return absl::InvalidArgumentError("line table: bad long delta");
      bci += static_cast<uint32_t>(dbci);
      line = static_cast<int32_t>(static_cast<uint32_t>(line) + static_cast<uint32_t>(dline));
    } else {
      bci += b >> 3;
      line += b & 7;
    }
    out.push_back({bci, line});
  }
}

int32_t JvmLineAt(const std::vector<JvmLine>& lines, uint32_t bci) {
  int32_t best_line = -1;
  uint32_t best_bci = 0;
  for (const JvmLine& l : lines) {
    if (l.bci == bci) return l.line;
    if (l.bci < bci && l.bci >= best_bci) {
      best_bci = l.bci;
      best_line = l.line;
    }
  }
  return best_line;
}

}  // namespace ehprof
