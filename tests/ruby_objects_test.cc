// Ruby's layout as agent/ruby/ finds it, on Debian 12's real libruby-3.1
// (stripped, .eh_frame only) and on a live ruby3.1 stopped in a known
// stack: the thread's execution context through ruby_current_ec's TLS slot
// (the way bpf/ruby.bpf.h goes), its control frames named with the line of
// each frame's pc, leaf first, as Ruby's own backtrace says them.
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "agent/process/process_memory.h"
#include "agent/ruby/ruby_binary.h"
#include "agent/ruby/ruby_class.h"
#include "agent/ruby/ruby_code_probe.h"
#include "agent/ruby/ruby_tracker.h"
#include "elf/elf_file.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

constexpr char kLibruby31[] = "/usr/lib/x86_64-linux-gnu/libruby-3.1.so.3.1";
constexpr char kRuby31[] = "/usr/bin/ruby3.1";

bool HaveRuby31() { return access(kLibruby31, R_OK) == 0 && access(kRuby31, X_OK) == 0; }

TEST(RubyBinary, FindsTheVmLoopTlsSlotAndLayoutInLibruby31) {
  if (!HaveRuby31()) GTEST_SKIP() << "Debian 12's ruby3.1 is not installed";
  auto elf = ElfFile::Open(kLibruby31);
  ASSERT_TRUE(elf.ok()) << elf.status();
  auto bin = InspectRubyBinary(*elf, kLibruby31);
  ASSERT_TRUE(bin.ok()) << bin.status();
  ASSERT_TRUE(bin->has_value());
  const RubyBinary& b = **bin;
  EXPECT_EQ(b.version, "3.1");
  // vm_exec_core is libruby's VM loop: far larger than its callers, and
  // rb_vm_exec (exported) is not it.
  auto vm_exec = testing::FindSymbol(kLibruby31, "rb_vm_exec");
  ASSERT_TRUE(vm_exec);
  EXPECT_GT(b.vm_end - b.vm_begin, 8192u);
  EXPECT_TRUE(b.vm_begin >= vm_exec->addr + vm_exec->size || b.vm_end <= vm_exec->addr);
  EXPECT_EQ(b.layout.cfp_size, 64);  // pc, sp, iseq, self, ep, block_code, __bp__, jit_return
  EXPECT_NE(b.tls_modid_slot, 0u);
  EXPECT_GT(b.symbols_ids, b.symbols_last_id);
  EXPECT_LE(b.symbols_ids - b.symbols_last_id, 24u);
}

TEST(RubyBinary, ProbesCode) {
  // add $0x38,%rsi (a 56-byte control frame, 3.3's).
  const uint8_t add[] = {0x48, 0x8b, 0x57, 0x08, 0x48, 0x83, 0xc6, 0x38, 0xc3};
  EXPECT_EQ(CfpSizeFromCode(add), 56u);
  const uint8_t none[] = {0x48, 0x83, 0xc6, 0x01, 0xc3};
  EXPECT_EQ(CfpSizeFromCode(none), 0u);
  // cmp %edi,0x10(%rip); mov 0x18(%rip),%rdi at 0x1000.
  const uint8_t refs[] = {0x39, 0x3d, 0x10, 0, 0, 0, 0x48, 0x8b, 0x3d, 0x18, 0, 0, 0};
  auto r = RipRefs(refs, 0x1000);
  ASSERT_EQ(r.size(), 2u);
  EXPECT_EQ(r[0].addr, 0x1000u + 6 + 0x10);
  EXPECT_EQ(r[0].use, 'c');
  EXPECT_EQ(r[1].addr, 0x1000u + 13 + 0x18);
  EXPECT_EQ(r[1].use, 'm');
}

TEST(RubySuccIndex, ImmediateAndBlockRanks) {
  // Positions 0, 3 and 60 start entries: ranks 1 (x < 3), 2 (3..59), 3.
  std::vector<uint8_t> t(48 + 80, 0);
  auto put7 = [&](uint32_t x, uint64_t rank) {
    uint64_t w;
    std::memcpy(&w, t.data() + (x / 9) * 8, 8);
    w |= rank << ((x % 9) * 7);
    std::memcpy(t.data() + (x / 9) * 8, &w, 8);
  };
  for (uint32_t x = 0; x < 54; ++x) put7(x, x < 3 ? 1 : 2);
  const uint32_t rank = 2;  // entries before position 54
  std::memcpy(t.data() + 48, &rank, 4);
  const uint64_t bits = 1ull << (60 - 54);
  std::memcpy(t.data() + 48 + 16, &bits, 8);
  EXPECT_EQ(SuccIndexLookup(t, 0), 1u);
  EXPECT_EQ(SuccIndexLookup(t, 5), 2u);
  EXPECT_EQ(SuccIndexLookup(t, 59), 2u);
  EXPECT_EQ(SuccIndexLookup(t, 60), 3u);
  EXPECT_EQ(SuccIndexLookup(t, 100), 3u);
  EXPECT_EQ(SuccIndexLookup(t, 54 + 512), std::nullopt);  // past the bytes
}

// The walk's division-free (pc >> 3) % EHP_RUBY_PC_MOD (bpf/ehprof_abi.h),
// which the tracker undoes with %: equal at the folds' edges, over the
// whole 64-bit range and along a run of pcs.
TEST(RubyPcAux, EqualsTheResidueTheTrackerUndoes) {
  std::vector<uint64_t> pcs = {0, 8, 8189 * 8, 8190 * 8, 8191 * 8, 8192 * 8, ~0ull, ~0ull - 7, 1ull << 63,
                               0x7fffffffffffull, 0x7f0123456780ull};
  for (int bit = 0; bit < 64; ++bit) {
    pcs.push_back(1ull << bit);
    pcs.push_back((1ull << bit) - 1);
  }
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (int i = 0; i < 100000; ++i) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;  // xorshift64
    pcs.push_back(x);
    pcs.push_back(0x560000000000ull + i * 8);
  }
  for (uint64_t pc : pcs) ASSERT_EQ(ehp_ruby_pc_aux(pc), (pc >> 3) % EHP_RUBY_PC_MOD) << std::hex << pc;
}

TEST(RubyClass, QualifiesLabelsAsRubyDoes) {
  const RubyClassName foo{"Foo::Bar", false}, single{"Foo", true}, none{"", false};
  EXPECT_EQ(QualifiedLabel("run", "run", foo), "Foo::Bar#run");
  EXPECT_EQ(QualifiedLabel("block in run", "run", foo), "block in Foo::Bar#run");
  EXPECT_EQ(QualifiedLabel("block (2 levels) in run", "run", single), "block (2 levels) in Foo.run");
  EXPECT_EQ(QualifiedLabel("rescue in run", "run", foo), "rescue in Foo::Bar#run");
  EXPECT_EQ(QualifiedLabel("run", "run", none), "run");        // no path: the bare label
  EXPECT_EQ(QualifiedLabel("other", "run", foo), "other");     // the base label does not end it
  EXPECT_EQ(QualifiedLabel("<main>", "", foo), "<main>");
}

// Keeps what the tracker publishes.
class KeepWriter : public MapWriter {
 public:
  explicit KeepWriter(ehp_ruby_proc* out) : out_(out) {}
  absl::Status Write(uint32_t, const void* values, uint32_t n) override {
    std::memcpy(out_, values, sizeof(*out_));
    return absl::OkStatus();
  }
  void Delete(uint32_t) override {}
  size_t value_size() const override { return sizeof(ehp_ruby_proc); }

 private:
  ehp_ruby_proc* out_;
};

// ruby3.1 running testdata/ruby/shapes.rb sleep, after it said "ready".
pid_t StartSleeper() {
  int fds[2];
  if (pipe(fds) != 0) return -1;
  const std::string script = testing::SourcePath("testdata/ruby/shapes.rb");
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    execl(kRuby31, kRuby31, script.c_str(), "sleep", "60", nullptr);
    _exit(127);
  }
  close(fds[1]);
  char buf[16] = {};
  const ssize_t n = read(fds[0], buf, sizeof(buf) - 1);
  close(fds[0]);
  if (n <= 0) return -1;
  usleep(300'000);  // from puts to sleep
  return pid;
}

// The method entry of the method whose env a block's env leads to, as
// bpf/ruby_frames.bpf.h's rb_local_method finds it; 0 none.
uint64_t LocalMethod(const ProcessMemory& mem, uint64_t prev) {
  for (int i = 0; i < 4 && (prev & 1); ++i) {
    uint64_t env[3] = {};
    if (!mem.Read((prev & ~uint64_t{3}) - 16, env, sizeof(env))) return 0;
    const uint32_t flags = static_cast<uint32_t>(env[2]);
    if (flags & 2) return (flags & 0x7fff0001) == 0x11110001 ? env[0] : 0;
    prev = env[1];
  }
  return 0;
}

// The words bpf/ruby.bpf.h pushes for every control frame of the thread
// whose fsbase is given, leaf first; *finish the index among the frames
// (a block's method word not counted) of the first flagged
// VM_FRAME_FLAG_FINISH.
std::vector<uint64_t> WalkControlFrames(const ProcessMemory& mem, const ehp_ruby_proc& p, uint64_t fsbase,
                                        int* finish) {
  std::vector<uint64_t> words;
  uint64_t dtv = 0, block = 0, ec = 0, stack = 0, size = 0, cfp = 0;
  if (!mem.ReadU64(fsbase + 8, &dtv) || !mem.ReadU64(dtv + p.tls_module * 16, &block) ||
      !mem.ReadU64(block + p.tls_offset, &ec) || !mem.ReadU64(ec + p.ec_vm_stack, &stack) ||
      !mem.ReadU64(ec + p.ec_vm_stack_size, &size) || !mem.ReadU64(ec + p.ec_cfp, &cfp)) {
    return words;
  }
  *finish = -1;
  int frames = 0;
  for (int i = 0; cfp + p.cfp_size <= stack + size * 8 && i < 1000; cfp += p.cfp_size, ++i) {
    uint64_t pc = 0, iseq = 0, ep = 0, env[3] = {};
    if (!mem.ReadU64(cfp + p.cfp_pc, &pc) || !mem.ReadU64(cfp + p.cfp_iseq, &iseq) ||
        !mem.ReadU64(cfp + p.cfp_ep, &ep) || !mem.Read(ep - 16, env, sizeof(env))) {
      break;
    }
    const uint32_t flags = static_cast<uint32_t>(env[2]), magic = flags & 0x7fff0001;
    const uint64_t aux = ehp_ruby_pc_aux(pc);
    uint64_t method = 0;
    if (magic == 0x55550001) {
      words.push_back(EHP_INTERP_FRAME(EHP_INTERP_RUBY, env[0], EHP_INTERP_AUX_UNKNOWN));
    } else if (!(flags & 0x80) && iseq && pc) {
      const bool local = flags & 2;
      words.push_back(EHP_INTERP_FRAME(EHP_INTERP_RUBY, local && magic == 0x11110001 && env[0] ? env[0] : iseq, aux));
      if (!local) method = LocalMethod(mem, env[1]);
    } else {
      continue;
    }
    if ((flags & 0x20) && *finish < 0) *finish = frames;
    ++frames;
    if (method) words.push_back(EHP_INTERP_FRAME(EHP_INTERP_RUBY, method, EHP_RUBY_AUX_METHOD));
  }
  return words;
}

TEST(RubyLive, NamesTheControlFramesOfAStoppedRuby31) {
  if (!HaveRuby31()) GTEST_SKIP() << "Debian 12's ruby3.1 is not installed";
  const pid_t pid = StartSleeper();
  ASSERT_GT(pid, 0);
  ehp_ruby_proc published{};
  Warnings warnings;
  InterpFrameTable table;
  RubyTracker tracker(std::make_unique<KeepWriter>(&published), &table, &warnings);
  auto attached = tracker.Attach(pid);
  ASSERT_TRUE(attached.ok() && *attached) << attached.status();
  EXPECT_EQ(published.cfp_size, 64);
  EXPECT_GT(published.tls_module, 0u);
  ASSERT_EQ(ptrace(PTRACE_ATTACH, pid, nullptr, nullptr), 0) << strerror(errno);
  int status = 0;
  waitpid(pid, &status, 0);
  user_regs_struct regs{};
  ASSERT_EQ(ptrace(PTRACE_GETREGS, pid, nullptr, &regs), 0);
  ProcessMemory mem(pid);
  int finish = -1;
  std::vector<uint64_t> words = WalkControlFrames(mem, published, regs.fs_base, &finish);
  // Ruby 3.1 keeps a class's path in an instance variable: no class path
  // field is found, and the names are the bare labels (as rbspy's there).
  tracker.NameFrames(pid, 1, &words);
  std::vector<InterpFrameName> names;
  for (uint64_t w : words) names.push_back(table.Name(w));
  ptrace(PTRACE_DETACH, pid, nullptr, nullptr);
  kill(pid, SIGKILL);
  waitpid(pid, &status, 0);
  const std::string file = testing::SourcePath("testdata/ruby/shapes.rb");
  struct Want {
    const char* function;
    bool native;
    int line;
  };
  const Want want[] = {
      {"sleep", true, -1},
      {"block in sleeper_b", false, testing::SourceLineWith("testdata/ruby/shapes.rb", "marker: sleep block")},
      {"each", true, -1},  // sort_by runs its block through each, as Ruby's backtrace says
      {"sort_by", true, -1},
      {"sleeper_b", false, testing::SourceLineWith("testdata/ruby/shapes.rb", "marker: sleep block")},
      {"sleeper_a", false, testing::SourceLineWith("testdata/ruby/shapes.rb", "marker: sleeper_a calls b")},
      {"<main>", false, testing::SourceLineWith("testdata/ruby/shapes.rb", "  sleeper_a(seconds)")},
  };
  ASSERT_GE(names.size(), std::size(want));
  for (size_t i = 0; i < std::size(want); ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(names[i].function, want[i].function);
    EXPECT_EQ(names[i].native, want[i].native);
    EXPECT_EQ(names[i].line, want[i].line);
    if (!want[i].native) {
      EXPECT_EQ(names[i].file, file);
    }
  }
  // The block is the frame the C method's rb_yield entered the VM for.
  EXPECT_EQ(finish, 1);
}


// testdata/hostile_ruby's fake libruby: taken for Ruby (its symbols and
// code look like libruby's), its one good iseq named, its liars not.
TEST(RubyLive, ReadsTheFakeLibrubyOnlyWhereItTellsTheTruth) {
  const std::string prog = testing::TestdataPath("hostile_ruby");
  const pid_t pid = fork();
  if (pid == 0) {
    execl(prog.c_str(), prog.c_str(), "0", "20", nullptr);
    _exit(127);
  }
  usleep(300'000);
  ehp_ruby_proc published{};
  Warnings warnings;
  InterpFrameTable table;
  RubyTracker tracker(std::make_unique<KeepWriter>(&published), &table, &warnings);
  auto attached = tracker.Attach(pid);
  EXPECT_TRUE(attached.ok() && *attached) << attached.status();
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace ehprof
