// The BPF walk's reading of a leaf compiled frame (bpf/hotspot_leaf.bpf.h),
// compiled here as C++ over this process's memory: at every instruction of
// methods as JDK 17's and Temurin 25's C1 compiled them (bytes from
// -XX:CompileCommand=print) and of C2's prologue without a stack bang, how
// much of the frame is on the stack: nothing before push rbp, rbp alone
// before sub rsp, all of it in the body and the entry barrier, rbp alone
// at pop rbp, nothing from the return poll on.
#include <cstdint>
#include <cstring>
#include <vector>

#include "bpf/ehprof_abi.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

typedef uint8_t __u8;
typedef uint32_t __u32;
typedef uint64_t __u64;
#define EHP_INLINE static inline

struct scratch {
  __u64 regs[EHP_REG_RSP + 1];
  __u64 jvm_code[2];
};
struct jvm_state {
  __u64 ra;
  __u8 insn[16];
};

int jvm_read(__u64 addr, void* out, __u32 size) {
  std::memcpy(out, reinterpret_cast<const void*>(addr), size);
  return 1;
}

#include "bpf/hotspot_leaf.bpf.h"

struct Insn {
  std::vector<uint8_t> bytes;
  __u32 layout;  // at this instruction
};

// The layouts at each instruction of code laid out from code_ + 16, the
// frame complete from offset `complete` of it; [sp] holds `at_sp`.
class HotspotLeaf : public ::testing::Test {
 protected:
  void Check(const std::vector<Insn>& code, size_t complete, uint64_t at_sp) {
    std::memset(code_, 0x90, sizeof(code_));
    size_t off = 16;
    std::vector<size_t> starts;
    for (const Insn& i : code) {
      starts.push_back(off);
      std::memcpy(code_ + off, i.bytes.data(), i.bytes.size());
      off += i.bytes.size();
    }
    scratch s{};
    s.jvm_code[0] = reinterpret_cast<uint64_t>(code_);
    s.jvm_code[1] = s.jvm_code[0] + sizeof(code_);
    s.regs[EHP_REG_RSP] = reinterpret_cast<uint64_t>(&at_sp);
    jvm_state st{};
    for (size_t k = 0; k < code.size(); ++k) {
      SCOPED_TRACE(k);
      const uint64_t pc = reinterpret_cast<uint64_t>(code_ + starts[k]);
      EXPECT_EQ(jvm_leaf_layout(&s, &st, pc, starts[k] < 16 + complete), code[k].layout);
    }
  }
  uint64_t InCode() const { return reinterpret_cast<uint64_t>(code_) + 8; }

  uint8_t code_[128];
};

TEST_F(HotspotLeaf, Jdk17C1) {  // T.getV: return this.v
  Check({{{0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff}, JVM_RA_AT_SP},  // the stack bang
         {{0x55}, JVM_RA_AT_SP},                                     // push rbp
         {{0x48, 0x83, 0xec, 0x30}, JVM_PUSHED},                     // sub rsp,0x30
         {{0x8b, 0x46, 0x0c}, JVM_FRAMED},                           // the body
         {{0x48, 0x83, 0xc4, 0x30}, JVM_FRAMED},                     // add rsp,0x30
         {{0x5d}, JVM_POPPING},                                      // pop rbp
         {{0x49, 0x3b, 0xa7, 0x40, 0x03, 0x00, 0x00}, JVM_RA_AT_SP},  // cmp rsp,[r15+0x340]
         {{0x0f, 0x87, 0x01, 0x00, 0x00, 0x00}, JVM_RA_AT_SP},       // ja the poll stub
         {{0xc3}, JVM_RA_AT_SP}},
        12, 0x7ffd00001000);
}

TEST_F(HotspotLeaf, Temurin25C1WithItsEntryBarrier) {
  const std::vector<Insn> code = {
      {{0x44, 0x8b, 0x56, 0x08}, JVM_FRAMED},  // the inline-cache check, [sp] no code
      {{0x89, 0x84, 0x24, 0x00, 0xc0, 0xfe, 0xff}, JVM_RA_AT_SP},
      {{0x55}, JVM_RA_AT_SP},
      {{0x48, 0x83, 0xec, 0x20}, JVM_PUSHED},
      {{0x41, 0x81, 0x7f, 0x20, 0x00, 0x00, 0x00, 0x00}, JVM_FRAMED},  // the entry barrier
      {{0x74, 0x05}, JVM_FRAMED},
      {{0xe8, 0x05, 0x89, 0xaa, 0xff}, JVM_FRAMED},
      {{0x8b, 0x46, 0x0c}, JVM_FRAMED},
      {{0x48, 0x83, 0xc4, 0x20}, JVM_FRAMED},
      {{0x5d}, JVM_POPPING},
      {{0x49, 0x3b, 0x67, 0x28}, JVM_RA_AT_SP},
      {{0x0f, 0x87, 0x01, 0x00, 0x00, 0x00}, JVM_RA_AT_SP},
      {{0xc3}, JVM_RA_AT_SP}};
  Check(code, 31, 0x7ffd00001000);
}

TEST_F(HotspotLeaf, BeforeTheFrameTheReturnAddressIsCode) {
  // The inline-cache check runs before anything is pushed: [sp] is the
  // caller's code.
  Check({{{0x44, 0x8b, 0x56, 0x08}, JVM_RA_AT_SP}, {{0x44, 0x3b, 0x50, 0x08}, JVM_RA_AT_SP}, {{0x55}, JVM_RA_AT_SP}},
        9, InCode());
}

TEST_F(HotspotLeaf, C2WithoutAStackBang) {
  Check({{{0x48, 0x81, 0xec, 0x00, 0x01, 0x00, 0x00}, JVM_RA_AT_SP},             // sub rsp,0x100
         {{0x48, 0x89, 0xac, 0x24, 0xf0, 0x00, 0x00, 0x00}, JVM_RBP_LIVE},     // mov [rsp+0xf0],rbp
         {{0x48, 0x89, 0xac, 0x24, 0x10, 0x00, 0x00, 0x00}, JVM_FRAMED}},      // a spill in the body
        15, 0x7ffd00001000);
}

}  // namespace
}  // namespace ehprof
