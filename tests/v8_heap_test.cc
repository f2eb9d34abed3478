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

namespace ehprof {
namespace {

constexpr uint16_t kOneByteString = 8 | 0;  // one byte, sequential
constexpr uint16_t kTwoByteString = 0;
constexpr uint16_t kConsString = 8 | 1;
constexpr uint16_t kThinString = 8 | 5;
constexpr uint16_t kSfi = 262, kScript = 167, kScopeInfo = 261, kFixedArray = 175, kJsObject = 2058;

V8Layout Node20Layout() {
  V8Layout l;
  l.proc.off_map = 0;
  l.proc.off_instance_type = 12;
  l.proc.type_shared_info = kSfi;
  l.proc.heap_object_tag = 1;
  l.proc.heap_object_tag_mask = 3;
  l.proc.smi_shift = 32;
  l.sfi_name_or_scope_info = 16;
  l.sfi_script_or_debug_info = 32;
  l.script_name = 16;
  l.script_source = 8;
  l.script_line_ends = 56;
  l.fixed_array_length = 8;
  l.fixed_array_data = 16;
  l.type_script = kScript;
  l.type_scope_info = kScopeInfo;
  l.type_fixed_array = kFixedArray;
  l.string_length = 12;
  l.seq_one_byte_chars = l.seq_two_byte_chars = 16;
  l.cons_first = 16;
  l.cons_second = 24;
  l.thin_actual = 16;
  l.is_not_string_mask = 0xff80;
  l.representation_mask = 7;
  l.encoding_mask = 8;
  l.one_byte_tag = 8;
  l.seq_tag = 0;
  l.cons_tag = 1;
  l.thin_tag = 5;
  l.sliced_tag = 3;
  return l;
}

// Heap objects in this process: each a zeroed run of words; pointers to
// them are tagged as V8's are.
class FakeHeap {
 public:
  uint64_t Object(size_t words, uint16_t type) {
    std::vector<uint64_t>& o = objects_.emplace_back(words, 0);
    std::vector<uint64_t>& map = objects_.emplace_back(4, 0);
    std::memcpy(reinterpret_cast<char*>(map.data()) + 12, &type, sizeof(type));
    o[0] = Tag(map.data());
    return Tag(o.data());
  }
  static uint64_t Tag(const void* p) { return reinterpret_cast<uint64_t>(p) + 1; }
  static uint64_t Smi(int64_t v) { return static_cast<uint64_t>(v) << 32; }
  static char* Bytes(uint64_t tagged) { return reinterpret_cast<char*>(tagged - 1); }
  static void Set(uint64_t tagged, uint32_t offset, uint64_t v) { std::memcpy(Bytes(tagged) + offset, &v, 8); }
  uint64_t String(const std::string& s) {
    const uint64_t o = Object(2 + (s.size() + 7) / 8, kOneByteString);
    SetLength(o, static_cast<int32_t>(s.size()));
    std::memcpy(Bytes(o) + 16, s.data(), s.size());
    return o;
  }
  uint64_t TwoByte(const std::u16string& s) {
    const uint64_t o = Object(2 + (s.size() * 2 + 7) / 8, kTwoByteString);
    SetLength(o, static_cast<int32_t>(s.size()));
    std::memcpy(Bytes(o) + 16, s.data(), s.size() * 2);
    return o;
  }
  static void SetLength(uint64_t o, int32_t n) { std::memcpy(Bytes(o) + 12, &n, 4); }

 private:
  std::deque<std::vector<uint64_t>> objects_;
};

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
