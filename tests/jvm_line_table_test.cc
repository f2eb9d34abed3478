// HotSpot's compressed line number tables (agent/jvm/jvm_line_table.h):
// tables written as HotSpot's CompressedLineNumberWriteStream writes them,
// in the UNSIGNED5 of JDK 20+ (x = 1) and of before (x = 0), decode to the
// pairs written; the line of a bci is HotSpot's; tables without their end,
// with an excluded byte or past the bound are errors.
#include "agent/jvm/jvm_line_table.h"

#include <vector>

#include "gtest/gtest.h"

namespace ehprof {
namespace {

// UNSIGNED5 as HotSpot writes it: x + value below L, else high bytes of
// six bits each (L = 192 - x low values).
void WriteUint(uint32_t v, int x, std::vector<uint8_t>* out) {
  const uint32_t low = 192 - static_cast<uint32_t>(x);
  uint32_t sum = v;
  for (int i = 0;; ++i) {
    if (sum < low || i == 4) {
      out->push_back(static_cast<uint8_t>(x + sum));
      return;
    }
    sum -= low;
    out->push_back(static_cast<uint8_t>(x + low + sum % 64));
    sum >>= 6;
  }
}

void WriteSigned(int32_t v, int x, std::vector<uint8_t>* out) {
  WriteUint((static_cast<uint32_t>(v) << 1) ^ static_cast<uint32_t>(v >> 31), x, out);
}

// CompressedLineNumberWriteStream: a byte for small forward deltas, else
// 0xff and the two deltas; 0 at the end.
std::vector<uint8_t> WriteTable(const std::vector<JvmLine>& lines, int x) {
  std::vector<uint8_t> out;
  int32_t bci = 0, line = 0;
  for (const JvmLine& l : lines) {
    const int32_t dbci = static_cast<int32_t>(l.bci) - bci, dline = l.line - line;
    bci = static_cast<int32_t>(l.bci);
    line = l.line;
    if (dbci >= 0 && dbci < 32 && dline >= 0 && dline < 8 && ((dbci << 3) | dline) != 0xff) {
      out.push_back(static_cast<uint8_t>((dbci << 3) | dline));
    } else {
      out.push_back(0xff);
      WriteSigned(dbci, x, &out);
      WriteSigned(dline, x, &out);
    }
  }
  out.push_back(0);
  return out;
}

// Lines out of order (a loop's condition after its body), a long method,
// a line far from the last, a backwards jump of the line.
const std::vector<JvmLine> kLines = {{0, 1},    {4, 3},     {9, 10},      {40, 9},        {41, 9000},
                                     {300, 12}, {301, 260}, {70000, 261}, {70031, 268}};

TEST(JvmLineTable, DecodesBothEncodings) {
  for (int x : {0, 1}) {
    const std::vector<uint8_t> bytes = WriteTable(kLines, x);
    auto lines = DecodeJvmLineTable(bytes, x);
    ASSERT_TRUE(lines.ok()) << "x " << x << ": " << lines.status();
    ASSERT_EQ(lines->size(), kLines.size());
    for (size_t i = 0; i < kLines.size(); ++i) {
      EXPECT_EQ((*lines)[i].bci, kLines[i].bci) << "x " << x << " pair " << i;
      EXPECT_EQ((*lines)[i].line, kLines[i].line) << "x " << x << " pair " << i;
    }
    if (x == 1) {
      for (size_t i = 0; i + 1 < bytes.size(); ++i) EXPECT_NE(bytes[i], 0) << "a 0 inside a JDK 20+ table";
    }
  }
}

TEST(JvmLineTable, LineOfABciIsHotSpots) {
  auto lines = DecodeJvmLineTable(WriteTable(kLines, 1), 1);
  ASSERT_TRUE(lines.ok());
  EXPECT_EQ(JvmLineAt(*lines, 0), 1);
  EXPECT_EQ(JvmLineAt(*lines, 3), 1);    // between pairs: the one below
  EXPECT_EQ(JvmLineAt(*lines, 40), 9);
  EXPECT_EQ(JvmLineAt(*lines, 200), 9000);
  EXPECT_EQ(JvmLineAt(*lines, 70031), 268);
  EXPECT_EQ(JvmLineAt({}, 5), -1);
  EXPECT_EQ(JvmLineAt({{10, 7}}, 5), -1);  // nothing at or below it
}

TEST(JvmLineTable, BadTablesAreErrors) {
  std::vector<uint8_t> bytes = WriteTable(kLines, 1);
  bytes.pop_back();  // no 0 at the end
  EXPECT_FALSE(DecodeJvmLineTable(bytes, 1).ok());
  EXPECT_FALSE(DecodeJvmLineTable(std::vector<uint8_t>{}, 0).ok());
  // An escape cut short, and a 0 inside its number where x is 1.
  EXPECT_FALSE(DecodeJvmLineTable(std::vector<uint8_t>{0xff, 0xc0}, 0).ok());
  EXPECT_FALSE(DecodeJvmLineTable(std::vector<uint8_t>{0xff, 0xc5, 0x00, 0x03, 0}, 1).ok());
  // Five high bytes: the fifth ends the number whatever it is.
  auto five = DecodeJvmLineTable(std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 2, 0}, 0);
  ASSERT_TRUE(five.ok()) << five.status();
  EXPECT_EQ(five->size(), 1u);
  std::vector<uint8_t> endless(kMaxJvmLines + 2, 0x09);
  endless.back() = 0;
  EXPECT_FALSE(DecodeJvmLineTable(endless, 0).ok());
}

}  // namespace
}  // namespace ehprof
