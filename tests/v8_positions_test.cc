// V8's source position tables and inlining positions decoded from bytes
// built here: by hand (one table spelled out byte by byte) and by an
// encoder written after V8's source-position-table.cc
// (tests/v8_position_encoder.h);
// tables cut short or with endless VLQs refused.
#include "agent/v8/v8_positions.h"

#include <cstring>
#include <vector>

#include "gtest/gtest.h"
#include "tests/v8_position_encoder.h"

namespace ehprof {
namespace {

using testing::EncodeV8Table;
using testing::PutV8Vlq;
using Entry = testing::V8TableEntry;

uint64_t Raw(int32_t script_offset, int32_t inlining_id) { return testing::V8RawPosition(script_offset, inlining_id); }

TEST(V8Positions, DecodesATableSpelledOutByHand) {
  // Code offset 0 (delta 1 from -1, a statement: zig-zag 2) at script
  // offset 596 (raw 1194: zig-zag 2388 = 0xd4 0x12); then 300 bytes on (not
  // a statement: -301, zig-zag 601 = 0xd9 0x04), in the function inlined
  // as id 1 (raw 2^32 + 2 * 41: delta 2^32 - 1112, zig-zag 0x1fffff750).
  const std::vector<uint8_t> bytes = {0x02, 0xd4, 0x12, 0xd9, 0x04, 0xd0, 0xee, 0xff, 0xff, 0x1f};
  auto t = DecodeV8PositionTable(bytes);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 2u);
  EXPECT_EQ((*t)[0].code_offset, 0);
  EXPECT_EQ((*t)[0].position.script_offset, 596);
  EXPECT_EQ((*t)[0].position.inlining_id, -1);
  EXPECT_EQ((*t)[1].code_offset, 300);
  EXPECT_EQ((*t)[1].position.script_offset, 40);
  EXPECT_EQ((*t)[1].position.inlining_id, 1);
}

TEST(V8Positions, DecodesWhatV8sEncoderWrites) {
  const std::vector<Entry> entries = {{0, 1193, -1, true},   {57, 1316, -1, false}, {320, 507, 7, true},
                                      {327, 458, 7, false},  {426, 614, 1, true},   {100000, 3, 65534, false},
                                      {100001, (1 << 30) - 2, 0, true}};
  auto t = DecodeV8PositionTable(EncodeV8Table(entries));
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), entries.size());
  for (size_t i = 0; i < entries.size(); ++i) {
    EXPECT_EQ((*t)[i].code_offset, entries[i].code_offset) << i;
    EXPECT_EQ((*t)[i].position.script_offset, entries[i].script_offset) << i;
    EXPECT_EQ((*t)[i].position.inlining_id, entries[i].inlining_id) << i;
  }
  // The entry in effect: the last at or before the offset.
  EXPECT_EQ(V8PositionAt(*t, -1), nullptr);
  EXPECT_EQ(V8PositionAt(*t, 0)->position.script_offset, 1193);
  EXPECT_EQ(V8PositionAt(*t, 56)->position.script_offset, 1193);
  EXPECT_EQ(V8PositionAt(*t, 57)->position.script_offset, 1316);
  EXPECT_EQ(V8PositionAt(*t, 400)->position.script_offset, 458);
  EXPECT_EQ(V8PositionAt(*t, 1 << 30)->code_offset, 100001);
  EXPECT_TRUE(DecodeV8PositionTable({})->empty());
}

TEST(V8Positions, ExternalPositionsHaveNoScriptOffset) {
  const V8SourcePosition p = DecodeV8SourcePosition(Raw(10, 2) | 1);
  EXPECT_EQ(p.script_offset, -1);
  EXPECT_EQ(p.inlining_id, 2);
  EXPECT_EQ(DecodeV8SourcePosition(0).script_offset, -1) << "kNoSourcePosition";
}

TEST(V8Positions, RefusesTablesThatDoNotDecode) {
  std::vector<uint8_t> cut = EncodeV8Table({{0, 5, -1, true}, {9, 7, -1, true}});
  cut.pop_back();
  EXPECT_FALSE(DecodeV8PositionTable(cut).ok()) << "a position missing";
  EXPECT_FALSE(DecodeV8PositionTable(std::vector<uint8_t>{0x80}).ok()) << "a VLQ cut short";
  EXPECT_FALSE(DecodeV8PositionTable(std::vector<uint8_t>(11, 0xff)).ok()) << "a VLQ past 64 bits";
  std::vector<uint8_t> far;
  PutV8Vlq(int64_t{1} << 32, &far);  // a code offset past 2^31
  PutV8Vlq(0, &far);
  EXPECT_FALSE(DecodeV8PositionTable(far).ok());
}

TEST(V8Positions, DecodesInliningPositions) {
  std::vector<uint8_t> bytes(2 * kV8InliningPositionBytes, 0xcd);  // padding left as junk
  const uint64_t first = Raw(1398, -1), second = Raw(604, 0);
  const int32_t f0 = 3, f1 = 0;
  std::memcpy(bytes.data(), &first, 8);
  std::memcpy(bytes.data() + 8, &f0, 4);
  std::memcpy(bytes.data() + 16, &second, 8);
  std::memcpy(bytes.data() + 24, &f1, 4);
  auto p = DecodeV8InliningPositions(bytes);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 2u);
  EXPECT_EQ((*p)[0].call.script_offset, 1398);
  EXPECT_EQ((*p)[0].call.inlining_id, -1);
  EXPECT_EQ((*p)[0].function, 3);
  EXPECT_EQ((*p)[1].call.script_offset, 604);
  EXPECT_EQ((*p)[1].call.inlining_id, 0);
  EXPECT_EQ((*p)[1].function, 0);
  bytes.pop_back();
  EXPECT_FALSE(DecodeV8InliningPositions(bytes).ok()) << "not whole entries";
}

}  // namespace
}  // namespace ehprof
