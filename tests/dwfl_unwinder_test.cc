// DwflUnwinder on real stacks captured in this process: a chain of four
// functions in this -O2/-O3 binary (no frame pointers, .eh_frame only) run on
// a thread whose stack we allocate, so the copy's bounds are known.
#include "agent/verify/dwfl_unwinder.h"

#include <dlfcn.h>
#include <elf.h>
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "agent/process/proc_maps.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "elf/elf_file.h"

// Stores the registers of its caller as they are once it returns: the
// callee-saved ones untouched, rsp past the return address, rip = the
// return address. The caller's CFI row there is the one for after the call,
// so the capture is a consistent leaf frame inside the caller.
asm(R"(
  .text
  .p2align 4
  .globl ehprof_dwfl_test_capture
  .type ehprof_dwfl_test_capture, @function
ehprof_dwfl_test_capture:
  .cfi_startproc
  movq %rax, 0(%rdi)
  movq %rdx, 8(%rdi)
  movq %rcx, 16(%rdi)
  movq %rbx, 24(%rdi)
  movq %rsi, 32(%rdi)
  movq %rdi, 40(%rdi)
  movq %rbp, 48(%rdi)
  leaq 8(%rsp), %rax
  movq %rax, 56(%rdi)
  movq %r8, 64(%rdi)
  movq %r9, 72(%rdi)
  movq %r10, 80(%rdi)
  movq %r11, 88(%rdi)
  movq %r12, 96(%rdi)
  movq %r13, 104(%rdi)
  movq %r14, 112(%rdi)
  movq %r15, 120(%rdi)
  movq (%rsp), %rax
  movq %rax, 128(%rdi)
  ret
  .cfi_endproc
  .size ehprof_dwfl_test_capture, .-ehprof_dwfl_test_capture
)");
extern "C" void ehprof_dwfl_test_capture(uint64_t* regs);

// A function whose last instruction is a two-byte `syscall`-sized one, and
// right after it a second function whose CFA is rsp + 16 from its first
// byte: a leaf pc at the boundary is the first function's syscall return
// (looked up at pc - 1: return address at rsp) or an interrupted pc in the
// second (return address at rsp + 8). Never called.
asm(R"(
  .text
  .p2align 4
  .globl ehprof_dwfl_test_ends_in_syscall
  .type ehprof_dwfl_test_ends_in_syscall, @function
ehprof_dwfl_test_ends_in_syscall:
  .cfi_startproc
  nop
  nop
  .cfi_endproc
  .size ehprof_dwfl_test_ends_in_syscall, .-ehprof_dwfl_test_ends_in_syscall
  .globl ehprof_dwfl_test_next_function
  .type ehprof_dwfl_test_next_function, @function
ehprof_dwfl_test_next_function:
  .cfi_startproc
  .cfi_def_cfa_offset 16
  nop
  ret
  .cfi_endproc
  .size ehprof_dwfl_test_next_function, .-ehprof_dwfl_test_next_function
)");
extern "C" void ehprof_dwfl_test_ends_in_syscall();
extern "C" void ehprof_dwfl_test_next_function();

namespace ehprof {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

constexpr size_t kCopyBytes = 64 * 1024;  // what the BPF program copies
constexpr size_t kThreadStackBytes = 1 << 20;

struct Chain {
  uint64_t stack_hi = 0;     // end of the thread's stack
  void* return_into[5] = {};  // [k]: Level(k+1)'s return address (into its caller)
  StackCapture capture;
};

__attribute__((noinline)) void CopyStack(Chain* c) {
  // Runs below the captured rsp, so it cannot disturb what it copies.
  const uint64_t rsp = c->capture.regs[7];
  const size_t n = std::min<uint64_t>(kCopyBytes, c->stack_hi - rsp);
  c->capture.stack.resize(n);
  std::memcpy(c->capture.stack.data(), reinterpret_cast<const void*>(rsp), n);
}

// Each level does work after its call so that none is a tail call.
__attribute__((noinline)) int Level4(Chain* c, int x) {
  c->return_into[3] = __builtin_return_address(0);
  ehprof_dwfl_test_capture(c->capture.regs);
  CopyStack(c);
  asm volatile("" ::: "memory");
  return x * 3 + 4;
}
__attribute__((noinline)) int Level3(Chain* c, int x) {
  c->return_into[2] = __builtin_return_address(0);
  return Level4(c, x + 3) * 5 + 3;
}
__attribute__((noinline)) int Level2(Chain* c, int x) {
  c->return_into[1] = __builtin_return_address(0);
  return Level3(c, x + 2) * 7 + 2;
}
__attribute__((noinline)) int Level1(Chain* c, int x) {
  c->return_into[0] = __builtin_return_address(0);
  return Level2(c, x + 1) * 11 + 1;
}

volatile int g_seed = 1;
volatile int g_sink = 0;

void* ThreadMain(void* arg) {
  g_sink = Level1(static_cast<Chain*>(arg), g_seed);
  return nullptr;
}

// Runs the chain on a thread with a stack of our own.
Chain CaptureChain() {
  Chain chain;
  void* stack = mmap(nullptr, kThreadStackBytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  EXPECT_NE(stack, MAP_FAILED);
  chain.stack_hi = reinterpret_cast<uint64_t>(stack) + kThreadStackBytes;
  pthread_attr_t attr;
  pthread_attr_init(&attr);
  pthread_attr_setstack(&attr, stack, kThreadStackBytes);
  pthread_t thread;
  EXPECT_EQ(pthread_create(&thread, &attr, ThreadMain, &chain), 0);
  pthread_join(thread, nullptr);
  pthread_attr_destroy(&attr);
  munmap(stack, kThreadStackBytes);
  return chain;
}

// This process's executable mappings, biased as the agent does it: the
// PT_LOAD holding the mapping's file offset gives vaddr - offset.
std::vector<DwflMapping> SelfMappings() {
  std::vector<DwflMapping> out;
  auto maps = ReadProcMaps(getpid());
  EXPECT_TRUE(maps.ok()) << maps.status();
  if (!maps.ok()) return out;
  std::map<std::string, std::vector<ElfSegment>> loads;
  for (const MapsEntry& e : *maps) {
    if (!e.exec || e.deleted || e.path.empty() || e.path[0] != '/') continue;
    if (!loads.contains(e.path)) {
      auto elf = ElfFile::Open(e.path);
      if (!elf.ok()) continue;
      auto& segs = loads[e.path];
      for (const ElfSegment& s : elf->segments()) {
        if (s.type == PT_LOAD) segs.push_back(s);
      }
    }
    for (const ElfSegment& s : loads[e.path]) {
      const uint64_t page_offset = s.offset & ~uint64_t{4095};
      if (e.offset < page_offset || e.offset >= s.offset + s.filesz) continue;
      out.push_back({e.start, e.end, e.start - e.offset - (s.vaddr - s.offset), e.path});
      break;
    }
  }
  return out;
}

std::string ObjectOf(uint64_t pc) {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(pc), &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

// The pcs a correct walk starts with: the capture point in Level4, then the
// return addresses into Level3, Level2, Level1 and ThreadMain.
std::vector<uint64_t> ExpectedPrefix(const Chain& c) {
  std::vector<uint64_t> want = {c.capture.regs[16]};
  for (int k = 3; k >= 0; --k) want.push_back(reinterpret_cast<uint64_t>(c.return_into[k]));
  return want;
}

TEST(DwflUnwinder, WalksRealStackToTheBottom) {
  const Chain chain = CaptureChain();
  ASSERT_GT(chain.capture.stack.size(), 1024u);
  DwflUnwinder unwinder(SelfMappings());
  auto pcs = unwinder.Unwind(chain.capture, 64);
  ASSERT_TRUE(pcs.ok()) << pcs.status();
  const std::vector<uint64_t> want = ExpectedPrefix(chain);
  ASSERT_GE(pcs->size(), want.size() + 1);
  EXPECT_THAT(std::vector<uint64_t>(pcs->begin(), pcs->begin() + want.size()),
              ElementsAreArray(want));
  // Above ThreadMain: glibc's start_thread, then clone3, whose return
  // address is undefined: the walk ends at the bottom, not for lack of stack.
  EXPECT_THAT(ObjectOf(pcs->at(want.size())), HasSubstr("libc.so"));
  EXPECT_EQ(unwinder.last_stop(), "");
}

TEST(DwflUnwinder, ReusesOneDwflAcrossCaptures) {
  const Chain a = CaptureChain();
  const Chain b = CaptureChain();
  DwflUnwinder unwinder(SelfMappings());
  auto first = unwinder.Unwind(a.capture, 64);
  StackCapture empty = a.capture;
  empty.stack.clear();
  auto leaf_only = unwinder.Unwind(empty, 64);
  auto second = unwinder.Unwind(b.capture, 64);
  auto again = unwinder.Unwind(a.capture, 64);
  ASSERT_TRUE(first.ok() && leaf_only.ok() && second.ok() && again.ok());
  EXPECT_EQ(*first, *again);
  EXPECT_EQ(leaf_only->size(), 1u);
  const std::vector<uint64_t> want = ExpectedPrefix(b);
  ASSERT_GE(second->size(), want.size());
  EXPECT_TRUE(std::equal(want.begin(), want.end(), second->begin()));
}

TEST(DwflUnwinder, EmptyStackGivesTheLeafOnly) {
  Chain chain = CaptureChain();
  chain.capture.stack.clear();
  DwflUnwinder unwinder(SelfMappings());
  auto pcs = unwinder.Unwind(chain.capture, 64);
  ASSERT_TRUE(pcs.ok()) << pcs.status();
  EXPECT_THAT(*pcs, ElementsAreArray({chain.capture.regs[16]}));
  EXPECT_THAT(unwinder.last_stop(), HasSubstr("memory read outside the captured stack"));
}

TEST(DwflUnwinder, ShortCopyEndsTheWalkEarly) {
  Chain chain = CaptureChain();
  // Enough for Level4's frame only (its CFA is at most a few words up).
  const uint64_t ra_slot =
      std::find(reinterpret_cast<const uint64_t*>(chain.capture.stack.data()),
                reinterpret_cast<const uint64_t*>(chain.capture.stack.data() +
                                                  chain.capture.stack.size()),
                reinterpret_cast<uint64_t>(chain.return_into[3])) -
      reinterpret_cast<const uint64_t*>(chain.capture.stack.data());
  chain.capture.stack.resize((ra_slot + 1) * 8);
  DwflUnwinder unwinder(SelfMappings());
  auto pcs = unwinder.Unwind(chain.capture, 64);
  ASSERT_TRUE(pcs.ok()) << pcs.status();
  const std::vector<uint64_t> want = ExpectedPrefix(chain);
  ASSERT_GE(pcs->size(), 2u);
  EXPECT_LT(pcs->size(), want.size());
  EXPECT_TRUE(std::equal(pcs->begin(), pcs->end(), want.begin()));
  EXPECT_THAT(unwinder.last_stop(), HasSubstr("memory read outside the captured stack"));
}

TEST(DwflUnwinder, StopsAtMaxFrames) {
  const Chain chain = CaptureChain();
  DwflUnwinder unwinder(SelfMappings());
  auto pcs = unwinder.Unwind(chain.capture, 3);
  ASSERT_TRUE(pcs.ok()) << pcs.status();
  const std::vector<uint64_t> want = ExpectedPrefix(chain);
  EXPECT_THAT(*pcs, ElementsAreArray(want.begin(), want.begin() + 3));
  EXPECT_EQ(unwinder.last_stop(), "max_frames");
}

TEST(DwflUnwinder, SkipsMissingAndMisplacedFiles) {
  const Chain chain = CaptureChain();
  std::vector<DwflMapping> mappings = SelfMappings();
  ASSERT_FALSE(mappings.empty());
  const size_t real = mappings.size();
  std::vector<std::string> real_paths;
  for (const DwflMapping& m : mappings) real_paths.push_back(m.path);
  // A file deleted since it was mapped.
  mappings.push_back({0x10000000, 0x10001000, 0x10000000, "/nonexistent/libgone.so"});
  // A real file at a bias that does not put it over its mapping.
  DwflMapping misplaced = mappings[0];
  misplaced.bias += 1ull << 40;
  mappings.push_back(misplaced);

  DwflUnwinder unwinder(mappings);
  std::vector<std::string> reported = unwinder.reported_paths();
  std::sort(reported.begin(), reported.end());
  std::sort(real_paths.begin(), real_paths.end());
  real_paths.erase(std::unique(real_paths.begin(), real_paths.end()), real_paths.end());
  EXPECT_EQ(reported, real_paths) << real << " mappings";

  auto pcs = unwinder.Unwind(chain.capture, 64);
  ASSERT_TRUE(pcs.ok()) << pcs.status();
  const std::vector<uint64_t> want = ExpectedPrefix(chain);
  ASSERT_GE(pcs->size(), want.size());
  EXPECT_TRUE(std::equal(want.begin(), want.end(), pcs->begin()));
}

TEST(DwflUnwinder, NoFilesStillGivesTheLeaf) {
  const Chain chain = CaptureChain();
  DwflUnwinder unwinder({{0x10000000, 0x10001000, 0, "/nonexistent/a.out"}});
  EXPECT_TRUE(unwinder.reported_paths().empty());
  auto pcs = unwinder.Unwind(chain.capture, 64);
  ASSERT_TRUE(pcs.ok()) << pcs.status();
  ASSERT_FALSE(pcs->empty());
  EXPECT_EQ(pcs->front(), chain.capture.regs[16]);
}

// Pins libdw's frame-pointer fallback: with no CFI for the pc it follows rbp
// ([rbp] = caller's rbp, [rbp+8] = return address); the 0 ending the chain
// is not reported as a frame.
TEST(DwflUnwinder, FollowsRbpWhereNoCfiCovers) {
  StackCapture capture;
  const uint64_t rsp = 0x7f0000000000;
  capture.regs[7] = rsp;
  capture.regs[6] = rsp + 16;  // rbp
  capture.regs[16] = 0x1234;   // in no module
  capture.stack.resize(64);
  const uint64_t frame[4] = {rsp + 32, 0x5555, 0, 0};  // at rbp, then the next rbp
  std::memcpy(capture.stack.data() + 16, frame, sizeof(frame));
  DwflUnwinder unwinder({});
  auto pcs = unwinder.Unwind(capture, 64);
  ASSERT_TRUE(pcs.ok()) << pcs.status();
  EXPECT_THAT(*pcs, ElementsAreArray({uint64_t{0x1234}, uint64_t{0x5555}}));
  EXPECT_EQ(unwinder.last_stop(), "return address 0");
}

TEST(DwflUnwinder, ASyscallsReturnPcIsLookedUpInTheFunctionThatMadeTheCall) {
  const uint64_t end = reinterpret_cast<uint64_t>(&ehprof_dwfl_test_ends_in_syscall) + 2;
  ASSERT_EQ(end, reinterpret_cast<uint64_t>(&ehprof_dwfl_test_next_function));
  // Two plausible return addresses (pcs in this binary), the caller's at rsp.
  const uint64_t caller = reinterpret_cast<uint64_t>(&ehprof_dwfl_test_capture) + 1;
  const uint64_t other = reinterpret_cast<uint64_t>(&ehprof_dwfl_test_next_function) + 1;
  StackCapture capture;
  capture.regs[7] = 0x7ffc00001000;
  capture.regs[16] = end;
  capture.stack.resize(16);
  std::memcpy(capture.stack.data(), &caller, 8);
  std::memcpy(capture.stack.data() + 8, &other, 8);
  DwflUnwinder unwinder(SelfMappings());

  capture.exact = false;
  auto pcs = unwinder.Unwind(capture, 2);
  ASSERT_TRUE(pcs.ok()) << pcs.status();
  EXPECT_THAT(*pcs, ElementsAreArray({end, caller}));

  capture.exact = true;
  pcs = unwinder.Unwind(capture, 2);
  ASSERT_TRUE(pcs.ok()) << pcs.status();
  EXPECT_THAT(*pcs, ElementsAreArray({end, other}));
}

}  // namespace
}  // namespace ehprof
