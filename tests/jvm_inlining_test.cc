// The scopes of a compiled frame (agent/jvm/jvm_inlining.h), read from an
// nmethod laid out in this process's own memory as JDK 17 lays one out
// (PcDescs, scopes and metadata at offsets from the nmethod): the chain at
// a leaf pc is that of the first PcDesc past it, at a return address the
// PcDesc at it; an nmethod of another method, a scope chain that loops, a
// metadata index past the table, a blob that is no nmethod are errors; a
// cached chain no longer holds once its nmethod's compile id changed.
#include "agent/jvm/jvm_inlining.h"

#include <unistd.h>

#include <climits>
#include <cstring>

#include "gtest/gtest.h"

namespace ehprof {
namespace {

struct FakeNmethod {  // at the blob, as the InlineFields below say
  uint64_t name = 0, code_begin = 0, method = 0;
  int32_t compile_id = 7, scopes_pcs = 0, dependencies = 0, metadata = 0;
  uint64_t scopes_data_begin = 0;
};

constexpr uint64_t kOuter = 0x7f0000001000, kInner = 0x7f0000002000;
constexpr uint32_t kBlock = 16, kMeta = 64, kData = 80, kPcs = 112, kDeps = 176, kCode = 192;

class JvmInlining : public ::testing::Test {
 protected:
  void SetUp() override {
    std::memset(heap_, 0, sizeof(heap_));
    std::memset(segmap_, 1, sizeof(segmap_));
    segmap_[0] = 0;  // one block: every segment leads back to the first
    blob_ = reinterpret_cast<uint64_t>(heap_) + kBlock;
    FakeNmethod nm;
    nm.name = reinterpret_cast<uint64_t>(kName);
    nm.code_begin = blob_ + kCode;
    nm.method = kOuter;
    nm.scopes_pcs = kPcs;
    nm.dependencies = kDeps;
    nm.metadata = kMeta;
    nm.scopes_data_begin = blob_ + kData;
    std::memcpy(At(0), &nm, sizeof(nm));
    const uint64_t metadata[2] = {kOuter, kInner};
    std::memcpy(At(kMeta), metadata, sizeof(metadata));
    // Scope at 1: the outer method at bci 10 (stored + 1), the last; at
    // 4: the inner method at bci 5, sent from the scope at 1.
    const uint8_t data[] = {0, 0, 1, 11, 1, 2, 6};
    std::memcpy(At(kData), data, sizeof(data));
    const int32_t pcs[4][4] = {{-1, 0, 0, 0}, {20, 4, 0, 0}, {40, 1, 0, 0}, {INT_MAX, 0, 0, 0}};
    std::memcpy(At(kPcs), pcs, sizeof(pcs));
    proc_.heaps[0] = {reinterpret_cast<uint64_t>(heap_), reinterpret_cast<uint64_t>(heap_) + sizeof(heap_),
                      reinterpret_cast<uint64_t>(segmap_)};
    proc_.nheaps = 1;
    proc_.log2_segment = 6;
    proc_.heap_block = kBlock;
    proc_.blob_name = offsetof(FakeNmethod, name);
    proc_.blob_code_begin = offsetof(FakeNmethod, code_begin);
    proc_.nmethod_method = offsetof(FakeNmethod, method);
    f_.usable = true;
    f_.pc_desc_size = 16;
    f_.pc_desc_pc = 0;
    f_.pc_desc_scope = 4;
    f_.compile_id = offsetof(FakeNmethod, compile_id);
    f_.scopes_pcs = offsetof(FakeNmethod, scopes_pcs);
    f_.dependencies = offsetof(FakeNmethod, dependencies);
    f_.metadata = offsetof(FakeNmethod, metadata);
    f_.scopes_data_begin = offsetof(FakeNmethod, scopes_data_begin);
  }
  uint8_t* At(uint32_t off) { return heap_ + kBlock + off; }
  absl::StatusOr<JvmScopes> Read(uint32_t code_offset, bool leaf, uint64_t method = kOuter) {
    return ReadJvmScopes(mem_, proc_, f_, blob_ + kCode + code_offset, leaf, method, 0);
  }

  static constexpr char kName[8] = "nmethod";
  alignas(64) uint8_t heap_[1024];
  uint8_t segmap_[16];
  uint64_t blob_ = 0;
  ehp_jvm_proc proc_{};
  InlineFields f_;
  ProcessMemory mem_{getpid()};
};

TEST_F(JvmInlining, LeafTakesTheNextPcDescAndAReturnAddressItsOwn) {
  auto leaf = Read(10, true);
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  ASSERT_EQ(leaf->scopes.size(), 2u);
  EXPECT_EQ(leaf->scopes[0].method, kInner);
  EXPECT_EQ(leaf->scopes[0].bci, 5);
  EXPECT_EQ(leaf->scopes[1].method, kOuter);
  EXPECT_EQ(leaf->scopes[1].bci, 10);
  EXPECT_EQ(leaf->compile_id, 7);
  auto ret = Read(40, false);
  ASSERT_TRUE(ret.ok()) << ret.status();
  ASSERT_EQ(ret->scopes.size(), 1u);
  EXPECT_EQ(ret->scopes[0].method, kOuter);
  EXPECT_TRUE(SameJvmNmethod(mem_, proc_, f_, *ret));
  int32_t recompiled = 8;
  std::memcpy(At(offsetof(FakeNmethod, compile_id)), &recompiled, sizeof(recompiled));
  EXPECT_FALSE(SameJvmNmethod(mem_, proc_, f_, *ret));
}

// A PcDesc marks where its code ends: an interrupted pc at a PcDesc's
// offset is the first instruction after that code, described by the next
// PcDesc; a return address there is the call's own.
TEST_F(JvmInlining, LeafAtAPcDescsOffsetRunsTheCodeAfterIt) {
  auto leaf = Read(20, true);
  ASSERT_TRUE(leaf.ok()) << leaf.status();
  ASSERT_EQ(leaf->scopes.size(), 1u);
  EXPECT_EQ(leaf->scopes[0].method, kOuter);
  auto last = Read(19, true);
  ASSERT_TRUE(last.ok()) << last.status();
  ASSERT_EQ(last->scopes.size(), 2u) << "the inlined code's last byte";
  EXPECT_EQ(last->scopes[0].method, kInner);
  auto ret = Read(20, false);
  ASSERT_TRUE(ret.ok()) << ret.status();
  ASSERT_EQ(ret->scopes.size(), 2u);
  EXPECT_EQ(ret->scopes[0].method, kInner);
  EXPECT_FALSE(Read(40, true).ok()) << "past the last PcDesc's code: the sentinel's null scope";
}

TEST_F(JvmInlining, ForeignOrBrokenDebugInfoIsAnError) {
  EXPECT_FALSE(Read(10, true, kInner).ok()) << "an nmethod of another method";
  EXPECT_FALSE(Read(100, true).ok()) << "past the last PcDesc: the sentinel's null scope";
  At(kData)[4] = 4;  // the inner scope sent from itself
  EXPECT_FALSE(Read(10, true).ok()) << "a scope chain that loops";
  At(kData)[4] = 1;
  At(kData)[5] = 3;  // metadata index 3 of 2
  EXPECT_FALSE(Read(10, true).ok()) << "a metadata index past the table";
  At(kData)[5] = 2;
  ASSERT_TRUE(Read(10, true).ok());
  std::memcpy(At(offsetof(FakeNmethod, name)), &blob_, sizeof(blob_));  // a name that is no "nmethod"
  EXPECT_FALSE(Read(10, true).ok()) << "a blob that is no nmethod";
}

}  // namespace
}  // namespace ehprof
