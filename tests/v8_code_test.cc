// V8CodeReader on optimized code laid out as node 20's V8 lays it (an
// InstructionStream before 64-aligned instructions, its Code, the
// DeoptimizationData with two functions inlined one into the other, a
// source position table), built in this process's memory: the functions
// at a pc come out innermost first with their script offsets, and code
// that lies (a Code that does not point back, a pc past the instructions,
// an inlined function that is no function, code freed under the reader)
// is refused, never named.
#include "agent/v8/v8_code.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>

#include "gtest/gtest.h"
#include "tests/v8_fake_heap.h"
#include "tests/v8_position_encoder.h"

namespace ehprof {
namespace {

using testing::FakeHeap;

constexpr uint32_t kTurbofan = 13, kBaseline = 11;
constexpr uint32_t kSize = 1000;

uint64_t Raw(int32_t script_offset, int32_t inlining_id) { return testing::V8RawPosition(script_offset, inlining_id); }

// (code offset, script offset, inlining id) entries, all statements.
std::vector<uint8_t> Table(const std::vector<testing::V8TableEntry>& entries) { return testing::EncodeV8Table(entries); }

class V8CodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    region_.reset(static_cast<uint8_t*>(std::aligned_alloc(4096, 4 * 4096)));
    std::memset(region_.get(), 0xcc, 4 * 4096);  // int3: no word of it looks like a pointer
    start_ = reinterpret_cast<uint64_t>(region_.get()) + 2 * 4096 + 64;
    istream_ = start_ - 16;
    istream_map_ = h_.Map(testing::kInstructionStream);
    outer_ = h_.Object(6, testing::kSfi);
    a_ = h_.Object(6, testing::kSfi);
    b_ = h_.Object(6, testing::kSfi);
    code_ = h_.Object(12, testing::kCode);
    Word(istream_) = istream_map_;
    Word(istream_ + 8) = code_;
    FakeHeap::Set(code_, 32, istream_ + 1);
    FakeHeap::Set(code_, 40, start_);
    SetKind(kTurbofan);
    const int32_t size = kSize;
    std::memcpy(FakeHeap::Bytes(code_) + 56, &size, 4);
    // b inlined into a (called at a's offset 200), a into outer (at 100).
    std::vector<uint8_t> inlining(32, 0);
    const uint64_t call_a = Raw(100, -1), call_b = Raw(200, 0);
    const int32_t fa = 0, fb = 1;
    std::memcpy(inlining.data(), &call_a, 8);
    std::memcpy(inlining.data() + 8, &fa, 4);
    std::memcpy(inlining.data() + 16, &call_b, 8);
    std::memcpy(inlining.data() + 24, &fb, 4);
    literals_ = h_.Array({a_ | 2, b_}, testing::kWeakFixedArray);  // a held weakly
    deopt_ = h_.Array({0, FakeHeap::Smi(2), literals_, 0, 0, 0, outer_, h_.ByteArray(inlining)});
    FakeHeap::Set(code_, 16, deopt_);
    FakeHeap::Set(code_, 24, h_.ByteArray(Table({{0, 10, -1}, {100, 150, 0}, {200, 250, 1}, {300, 20, -1}})));
  }
  static uint64_t& Word(uint64_t addr) { return *reinterpret_cast<uint64_t*>(addr); }
  void SetKind(uint32_t kind) { std::memcpy(FakeHeap::Bytes(code_) + 48, &kind, 4); }

  struct Free {
    void operator()(uint8_t* p) const { std::free(p); }
  };
  std::unique_ptr<uint8_t, Free> region_;
  FakeHeap h_;
  V8Layout layout_ = testing::Node20Layout();
  ProcessMemory mem_{getpid()};
  V8CodeReader reader_{mem_, layout_};
  uint64_t start_ = 0, istream_ = 0, istream_map_ = 0, outer_ = 0, a_ = 0, b_ = 0, code_ = 0;
  uint64_t literals_ = 0, deopt_ = 0;
};

TEST_F(V8CodeTest, FindsTheCodeAtAPcAndTheFunctionsInlinedThere) {
  uint64_t map = 0;
  auto code = reader_.Find(start_ + 250, &map);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_EQ(map, istream_map_) << "InstructionStream's map, learnt";
  EXPECT_EQ(code->istream, istream_);
  EXPECT_EQ(code->code, code_ - 1);
  EXPECT_EQ(code->start, start_);
  EXPECT_EQ(code->size, kSize);
  EXPECT_TRUE(code->optimized);
  EXPECT_EQ(code->sfi, outer_ - 1);
  ASSERT_EQ(code->inlined.size(), 2u);
  EXPECT_EQ(code->inlined[0].sfi, a_ - 1) << "a weak literal is read through";
  auto scopes = V8ScopesAt(*code, 250);
  ASSERT_TRUE(scopes.ok()) << scopes.status();
  ASSERT_EQ(scopes->size(), 3u);
  EXPECT_EQ((*scopes)[0].sfi, b_ - 1);
  EXPECT_EQ((*scopes)[0].script_offset, 250);
  EXPECT_EQ((*scopes)[1].sfi, a_ - 1);
  EXPECT_EQ((*scopes)[1].script_offset, 200);
  EXPECT_EQ((*scopes)[2].sfi, outer_ - 1);
  EXPECT_EQ((*scopes)[2].script_offset, 100);
  scopes = V8ScopesAt(*code, 310);
  ASSERT_TRUE(scopes.ok());
  ASSERT_EQ(scopes->size(), 1u);
  EXPECT_EQ((*scopes)[0].script_offset, 20);
  // Found again by the map now known, from the code's first byte and its last.
  EXPECT_TRUE(reader_.Find(start_, &map).ok());
  EXPECT_TRUE(reader_.Find(start_ + kSize - 1, &map).ok());
  EXPECT_TRUE(reader_.Same(*code));
}

TEST_F(V8CodeTest, CodeThatLiesIsRefused) {
  uint64_t map = 0;
  EXPECT_FALSE(reader_.Find(start_ + kSize + 8, &map).ok()) << "past its instructions";
  FakeHeap::Set(code_, 32, istream_ + 64 + 1);
  EXPECT_FALSE(reader_.Find(start_ + 250, &map).ok()) << "a Code that does not point back";
  FakeHeap::Set(code_, 32, istream_ + 1);
  FakeHeap::Set(literals_, 24, h_.String("notAFunction"));
  EXPECT_FALSE(reader_.Find(start_ + 250, &map).ok()) << "an inlined function that is none";
  FakeHeap::Set(literals_, 24, b_);
  FakeHeap::Set(code_, 24, h_.ByteArray(Table({{0, 10, 5}})));
  auto code = reader_.Find(start_ + 250, &map);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_FALSE(V8ScopesAt(*code, 250).ok()) << "an inlining id out of bounds";
  FakeHeap::Set(deopt_, 16 + 8, FakeHeap::Smi(-1));
  EXPECT_FALSE(reader_.Find(start_ + 250, &map).ok()) << "a negative inlined count";
}

TEST_F(V8CodeTest, FreedCodeIsNoLongerTheSame) {
  uint64_t map = 0;
  auto code = reader_.Find(start_ + 8, &map);
  ASSERT_TRUE(code.ok()) << code.status();
  FakeHeap::Set(code_, 24, h_.ByteArray(Table({{0, 10, -1}})));
  EXPECT_FALSE(reader_.Same(*code)) << "other tables: other code";
  Word(istream_) = 0xcccccccccccccccc;
  EXPECT_FALSE(reader_.Same(*code));
  EXPECT_FALSE(reader_.Find(start_ + 8, &map).ok());
}

TEST_F(V8CodeTest, BaselineCodeIsFoundWithoutInlining) {
  SetKind(kBaseline);
  uint64_t map = 0;
  auto code = reader_.Find(start_ + 8, &map);
  ASSERT_TRUE(code.ok()) << code.status();
  EXPECT_FALSE(code->optimized);
  EXPECT_TRUE(code->positions.empty());
}

// An interpreted frame's line: the positions of the BytecodeArray its
// function runs, directly or through baseline code; none yet collected
// (undefined) is no table, not an error.
TEST_F(V8CodeTest, ReadsTheBytecodesPositions) {
  const uint64_t bytecode = h_.Object(8, testing::kBytecodeArray);
  FakeHeap::Set(bytecode, 32, h_.ByteArray(Table({{-1, 40, -1}, {0, 44, -1}, {7, 60, -1}})));
  const uint64_t sfi = h_.Object(6, testing::kSfi);
  FakeHeap::Set(sfi, 8, bytecode);
  auto t = reader_.BytecodePositions(sfi - 1);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->size(), 3u);
  EXPECT_EQ(V8PositionAt(*t, 9)->position.script_offset, 60);
  EXPECT_EQ(V8PositionAt(*t, 3)->position.script_offset, 44);
  const uint64_t baseline = h_.Object(12, testing::kCode);
  FakeHeap::Set(baseline, 16, bytecode);
  FakeHeap::Set(sfi, 8, baseline);
  EXPECT_EQ(reader_.BytecodePositions(sfi - 1)->size(), 3u) << "through baseline code";
  FakeHeap::Set(bytecode, 32, h_.Object(2, testing::kJsObject));  // undefined, an oddball: not collected
  EXPECT_TRUE(reader_.BytecodePositions(sfi - 1)->empty());
  FakeHeap::Set(sfi, 8, h_.String("notBytecode"));
  EXPECT_FALSE(reader_.BytecodePositions(sfi - 1).ok());
}

}  // namespace
}  // namespace ehprof
