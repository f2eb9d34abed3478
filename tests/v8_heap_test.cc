// V8Heap on objects laid out as node 20's V8 lays them (the v8dbg values of
// its binary), built in this process's own memory and read back through
// process_vm_readv: names of every string shape, and memory that lies
// (cycles, lengths out of bounds, objects of another type) refused rather
// than named.
#include "agent/v8/v8_heap.h"

#include <unistd.h>

#include <cstring>
#include <deque>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/v8_fake_heap.h"

namespace ehprof {
namespace {

using testing::FakeHeap;
using testing::kConsString;
using testing::kJsObject;
using testing::kScopeInfo;
using testing::kScript;
using testing::kSfi;
using testing::kThinString;
using testing::Node20Layout;

class V8HeapTest : public ::testing::Test {
 protected:
  V8Layout layout_ = Node20Layout();
  ProcessMemory mem_{getpid()};
  V8Heap heap_{mem_, layout_};
  FakeHeap h_;
};

TEST_F(V8HeapTest, ReadsEveryStringShape) {
  EXPECT_EQ(*heap_.ReadString(h_.String("hotA")), "hotA");
  EXPECT_EQ(*heap_.ReadString(h_.TwoByte(u"caf\u00e9\U0001F600")), "caf\xc3\xa9\xf0\x9f\x98\x80");
  const uint64_t cons = h_.Object(4, kConsString);
  FakeHeap::SetLength(cons, 7);
  FakeHeap::Set(cons, 16, h_.String("Module."));
  FakeHeap::Set(cons, 24, h_.String("_load"));
  EXPECT_EQ(*heap_.ReadString(cons), "Module._load");
  const uint64_t thin = h_.Object(3, kThinString);
  FakeHeap::SetLength(thin, 4);
  FakeHeap::Set(thin, 16, h_.String("thin"));
  EXPECT_EQ(*heap_.ReadString(thin), "thin");
}

TEST_F(V8HeapTest, LyingStringsAreRefusedOrBounded) {
  const uint64_t cons = h_.Object(4, kConsString);
  FakeHeap::SetLength(cons, 2);
  FakeHeap::Set(cons, 16, cons);  // a cycle
  FakeHeap::Set(cons, 24, cons);
  EXPECT_FALSE(heap_.ReadString(cons).ok());
  const uint64_t negative = h_.String("x");
  FakeHeap::SetLength(negative, -1);
  EXPECT_FALSE(heap_.ReadString(negative).ok());
  const uint64_t huge = h_.String("y");
  FakeHeap::SetLength(huge, 1 << 30);
  EXPECT_FALSE(heap_.ReadString(huge).ok());
  const uint64_t beyond = h_.String("z");
  FakeHeap::SetLength(beyond, 1 << 20);  // claims more than is mapped after it, or only junk
  auto r = heap_.ReadString(beyond);
  if (r.ok()) {
    EXPECT_LE(r->size(), kMaxV8NameBytes + 3);
  }
  EXPECT_FALSE(heap_.ReadString(h_.Object(2, kJsObject)).ok()) << "not a string";
  EXPECT_FALSE(heap_.ReadString(FakeHeap::Smi(5)).ok()) << "a Smi";
  EXPECT_FALSE(heap_.ReadString(8).ok()) << "unmapped";
  const std::string long_name(3 * kMaxV8NameBytes, 'a');
  EXPECT_EQ(*heap_.ReadString(h_.String(long_name)), std::string(kMaxV8NameBytes, 'a') + "...");
}

// Cons strings 16 deep whose two halves are each the same next one: 2^16
// empty pieces within the depth bound. Refused after kMaxStringPieces
// reads, not read whole (every name read of an unprivileged user's
// process cost the agent a second of system calls); a string of a few
// hundred real pieces still reads.
TEST_F(V8HeapTest, AConsStringOfExponentiallyManyPiecesIsRefused) {
  uint64_t next = h_.String("");
  for (int i = 0; i < 16; ++i) {
    const uint64_t cons = h_.Object(4, kConsString);
    FakeHeap::Set(cons, 16, next);
    FakeHeap::Set(cons, 24, next);
    next = cons;
  }
  auto bomb = heap_.ReadString(next);
  ASSERT_FALSE(bomb.ok());
  EXPECT_NE(bomb.status().message().find("pieces"), std::string::npos) << bomb.status();
  uint64_t chain = h_.String("a");
  for (int i = 0; i < 15; ++i) {
    const uint64_t cons = h_.Object(4, kConsString);
    FakeHeap::SetLength(cons, i + 2);
    FakeHeap::Set(cons, 16, chain);
    FakeHeap::Set(cons, 24, h_.String("b"));
    chain = cons;
  }
  EXPECT_EQ(*heap_.ReadString(chain), "a" + std::string(15, 'b'));
}

TEST_F(V8HeapTest, NamesAFunctionFromItsScopeInfoAndItsScriptsLines) {
  const uint64_t script = h_.Object(8, kScript);
  FakeHeap::Set(script, 16, h_.String("/srv/app.js"));
  FakeHeap::Set(script, 8, h_.String("'use strict';\nfunction hot(n) {\n  return n;\n}\n"));
  FakeHeap::Set(script, 56, FakeHeap::Smi(0));  // line ends not computed
  // ScopeInfo: flags, parameter count, one context local (name, info), the
  // function variable (name, slot), then its start and end positions.
  const uint64_t scope = h_.Object(10, kScopeInfo);
  FakeHeap::Set(scope, 24, FakeHeap::Smi(1));
  FakeHeap::Set(scope, 32, h_.String("local"));
  FakeHeap::Set(scope, 40, FakeHeap::Smi(0));
  FakeHeap::Set(scope, 48, h_.String("hot"));
  FakeHeap::Set(scope, 56, FakeHeap::Smi(0));
  FakeHeap::Set(scope, 64, FakeHeap::Smi(26));
  FakeHeap::Set(scope, 72, FakeHeap::Smi(46));
  const uint64_t sfi = h_.Object(6, kSfi);
  FakeHeap::Set(sfi, 16, scope);
  FakeHeap::Set(sfi, 32, script);
  auto f = heap_.ReadFunction(sfi - 1);
  ASSERT_TRUE(f.ok()) << f.status();
  EXPECT_EQ(f->name, "hot");
  EXPECT_EQ(f->script, "/srv/app.js");
  EXPECT_EQ(f->start_position, 26);
  auto ends = heap_.ReadLineEnds(f->script_addr);
  ASSERT_TRUE(ends.ok()) << ends.status();
  // The newlines, then where the source ends.
  EXPECT_EQ(*ends, (std::vector<int32_t>{13, 31, 43, 45, 46}));
  EXPECT_FALSE(heap_.ReadFunction(h_.Object(6, kJsObject) - 1).ok()) << "not a SharedFunctionInfo";
}

}  // namespace
}  // namespace ehprof
