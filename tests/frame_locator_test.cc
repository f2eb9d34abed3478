// The one rule where a user frame is and what names JIT code
// (agent/resolve/frame_locator.h), on a hand-built tracker history and perf
// maps in a temporary directory, through both paths: `record`'s
// (ResolveSamples) and the agent's (StackAggregator, IntervalSymbolizer).
#include "agent/resolve/frame_locator.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/continuous/interval_profile.h"
#include "agent/continuous/interval_symbolizer.h"
#include "agent/resolve/profile_resolver.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

// No such processes: nothing is opened in /proc.
constexpr uint32_t kPidA = 4190011, kPidB = 4190012;
constexpr uint64_t kJit = 0x7f0000001000;  // both processes' JIT code is here

MapsEntry Anon(uint64_t start, uint64_t end) { return testing::TextMapping(start, end, ""); }

class FrameLocator : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/frame_locator.", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string MapPath(uint32_t pid) const { return absl::StrCat(dir_, "/perf-", pid, ".map"); }
  void Write(uint32_t pid, const std::string& text, bool append = false) const {
    std::ofstream out(MapPath(pid), append ? std::ios::app : std::ios::trunc);
    out << text;
  }
  JitSymbols Jit(size_t max_entries = SIZE_MAX, size_t max_bytes = SIZE_MAX) const {
    return JitSymbols({max_entries, dir_, max_bytes}, &warnings_);
  }

  std::string dir_;
  mutable Warnings warnings_;
};

TEST_F(FrameLocator, ReturnAddressesAtTheCallSiteInFileAnonOrNoMapping) {
  Warnings warnings;
  FileTables files(nullptr, &warnings);
  ProcessTracker tracker(&files, nullptr, &warnings);
  tracker.Apply(kPidA, {testing::TextMapping(0x400000, 0x500000, "/bin/work", 0x1000), Anon(kJit, kJit + 0x10000)},
                10);
  EXPECT_EQ(FrameSite(0x401234 | EHP_FRAME_EXACT), 0x401234u);
  EXPECT_EQ(FrameSite(0x401234), 0x401233u);
  FrameLocation file = LocateUserFrame(tracker, kPidA, 20, 0x402001);
  EXPECT_EQ(file.kind, FrameLocation::Kind::kFile);
  EXPECT_EQ(file.site, 0x402000u);
  ASSERT_NE(file.mapping, nullptr);
  EXPECT_EQ(file.mapping->path, "/bin/work");
  EXPECT_EQ(file.elf_vaddr, 0x402000u - 0x400000 + 0x1000);
  EXPECT_EQ(LocateUserFrame(tracker, kPidA, 20, (kJit + 8) | EHP_FRAME_EXACT).kind, FrameLocation::Kind::kAnon);
  EXPECT_EQ(LocateUserFrame(tracker, kPidA, 20, 0x900000).kind, FrameLocation::Kind::kUnmapped);
  EXPECT_EQ(LocateUserFrame(tracker, kPidB, 20, 0x402001).kind, FrameLocation::Kind::kUnmapped);
}

// A map another user wrote for a process is not read: only root, the user
// running ehprof or the process's own user may name its code.
TEST_F(FrameLocator, APerfMapOfAnotherUserIsNotRead) {
  if (geteuid() != 0) GTEST_SKIP() << "giving a file to another user needs root";
  constexpr uid_t kNobody = 65534;
  // A process of uid 65534, alive while the maps are read.
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    if (setresuid(kNobody, kNobody, kNobody) != 0) _exit(1);
    (void)!write(ready[1], "x", 1);
    pause();
    _exit(0);
  }
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  const auto pid = static_cast<uint32_t>(child);
  Write(pid, absl::StrCat(absl::Hex(kJit), " 40 JS:*own a.js:1\n"));
  Write(kPidA, absl::StrCat(absl::Hex(kJit), " 40 JS:*planted b.js:1\n"));
  ASSERT_EQ(chown(MapPath(pid).c_str(), kNobody, kNobody), 0);
  ASSERT_EQ(chown(MapPath(kPidA).c_str(), kNobody, kNobody), 0);
  JitSymbols jit = Jit();
  EXPECT_EQ(jit.Frame(pid, kJit + 4, true).symbol, "JS:*own a.js:1");
  // kPidA (no such process, let alone one of uid 65534): not read.
  EXPECT_EQ(jit.Frame(kPidA, kJit + 4, true).dso, "[anon]");
  const std::vector<std::string> warnings = warnings_.Take();
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find(MapPath(kPidA) + ": owned by uid 65534"), std::string::npos) << warnings[0];
  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  close(ready[0]);
  close(ready[1]);
}

TEST_F(FrameLocator, EachProcessNamesItsOwnJitCode) {
  Write(kPidA, absl::StrCat(absl::Hex(kJit), " 40 JS:*hotA a.js:1\n"));
  Write(kPidB, absl::StrCat(absl::Hex(kJit), " 40 JS:*other b.js:9\n"));
  JitSymbols jit = Jit();
  ResolvedFrame a = jit.Frame(kPidA, kJit + 4, true);
  ResolvedFrame b = jit.Frame(kPidB, kJit + 4, true);
  EXPECT_EQ(a.symbol, "JS:*hotA a.js:1");
  EXPECT_EQ(a.dso, MapPath(kPidA));
  EXPECT_TRUE(a.jit);
  EXPECT_EQ(a.addr, kJit + 4);
  EXPECT_EQ(b.symbol, "JS:*other b.js:9");
  EXPECT_EQ(b.dso, MapPath(kPidB));
  // Past the entries: anonymous memory, or nothing known.
  EXPECT_EQ(jit.Frame(kPidA, kJit + 0x40, true).dso, "[anon]");
  ResolvedFrame none = jit.Frame(kPidA, kJit + 0x40, false);
  EXPECT_EQ(none.dso, "[unknown]");
  EXPECT_EQ(none.symbol, "[unknown]");
  EXPECT_FALSE(none.jit);
  EXPECT_TRUE(warnings_.Take().empty());
}

TEST_F(FrameLocator, AGrowingMapIsReadAgainEachRoundWholeLinesOnly) {
  Write(kPidA, "1000 10 first\n2000 10 sec");  // the JIT is writing its second line
  JitSymbols jit = Jit();
  EXPECT_EQ(jit.Frame(kPidA, 0x1004, true).symbol, "first");
  EXPECT_EQ(jit.Frame(kPidA, 0x2004, true).symbol, "[unknown]");
  EXPECT_EQ(jit.entries(), 1u);
  Write(kPidA, "ond\n3000 10 third\n", /*append=*/true);
  // Within a round the map is not looked at again.
  EXPECT_EQ(jit.Frame(kPidA, 0x3004, true).symbol, "[unknown]");
  jit.NextRound();
  EXPECT_EQ(jit.Frame(kPidA, 0x2004, true).symbol, "second");
  EXPECT_EQ(jit.Frame(kPidA, 0x3004, true).symbol, "third");
  EXPECT_EQ(jit.entries(), 3u);
  // Replaced by a shorter file: read anew, nothing of the old one kept.
  Write(kPidA, "4000 10 fourth\n");
  jit.NextRound();
  EXPECT_EQ(jit.Frame(kPidA, 0x4004, true).symbol, "fourth");
  EXPECT_EQ(jit.Frame(kPidA, 0x1004, true).symbol, "[unknown]");
  EXPECT_EQ(jit.entries(), 1u);
  EXPECT_TRUE(warnings_.Take().empty());
}

TEST_F(FrameLocator, MissingMapIsQuietAndBrokenLinesOneWarning) {
  JitSymbols jit = Jit();
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 5; ++i) EXPECT_EQ(jit.Frame(kPidA, 0x1004 + i, false).symbol, "[unknown]");
    jit.NextRound();
  }
  EXPECT_TRUE(warnings_.Take().empty());
  // Appearing later, it is read.
  Write(kPidA, "1000 10 late\nnot a line\n");
  EXPECT_EQ(jit.Frame(kPidA, 0x1004, false).symbol, "late");
  Write(kPidA, "also broken\n1100 10 later\n", /*append=*/true);
  jit.NextRound();
  EXPECT_EQ(jit.Frame(kPidA, 0x1104, false).symbol, "later");
  std::vector<std::string> w = warnings_.Take();
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0], absl::StrCat(MapPath(kPidA), " (pid ", kPidA, "): 1 malformed or overlong lines skipped"));
}

TEST_F(FrameLocator, EntriesAreBoundedLeastRecentlyUsedFirst) {
  Write(kPidA, "1000 10 a1\n1010 10 a2\n");
  Write(kPidB, "1000 10 b1\n1010 10 b2\n");
  JitSymbols jit = Jit(/*max_entries=*/3);
  EXPECT_EQ(jit.Frame(kPidA, 0x1004, true).symbol, "a1");
  EXPECT_EQ(jit.Frame(kPidB, 0x1004, true).symbol, "b1");
  EXPECT_EQ(jit.processes(), 1u);  // A's map went for B's
  EXPECT_EQ(jit.entries(), 2u);
  // Read again when needed.
  EXPECT_EQ(jit.Frame(kPidA, 0x1014, true).symbol, "a2");
  EXPECT_EQ(jit.entries(), 2u);
}

// The agent: anonymous frames of two processes at one address stay apart
// and are each named from their own map; a frame in no mapping when its
// sample arrived is located when the interval is handed over, as `record`
// (which resolves after recording) locates it.
TEST_F(FrameLocator, TheAgentLocatesAndNamesFramesAsRecordDoes) {
  Write(kPidA, absl::StrCat(absl::Hex(kJit), " 40 JS:*hotA a.js:1\n"));
  Write(kPidB, absl::StrCat(absl::Hex(kJit), " 40 JS:*other b.js:9\n"));
  Warnings warnings;
  FileTables files(nullptr, &warnings);
  ProcessTracker tracker(&files, nullptr, &warnings);
  tracker.Apply(kPidA, {Anon(kJit, kJit + 0x10000)}, 10);
  tracker.Apply(kPidB, {Anon(kJit, kJit + 0x10000)}, 10);
  std::vector<RawSample> raws;
  for (uint32_t pid : {kPidA, kPidB}) {
    RawSample s;
    s.pid = s.tid = pid;
    s.comm = "node";
    s.time_ns = 100;
    s.count = 1;
    // The leaf in JIT code, its caller in a library not read yet.
    s.user = {(kJit + 4) | EHP_FRAME_EXACT, 0x600011};
    raws.push_back(s);
  }
  StackAggregator agg;
  for (const RawSample& s : raws) agg.Add(s, tracker, "svc");
  // The library's mapping, read after the samples (/proc, or the kernel's
  // EHP_EVENT_MAPPING), from a time after theirs.
  tracker.Apply(kPidA, {Anon(kJit, kJit + 0x10000), testing::TextMapping(0x600000, 0x601000, "/lib/late.so")},
                200);
  tracker.Apply(kPidB, {Anon(kJit, kJit + 0x10000), testing::TextMapping(0x600000, 0x601000, "/lib/late.so")},
                200);
  IntervalProfile p = agg.Take(300, &tracker);
  size_t anon = 0, late = 0;
  for (const LocatedFrame& f : p.frames) {
    anon += f.mapping == LocatedFrame::kAnon;
    late += f.mapping < p.mappings.size() && p.mappings[f.mapping].path == "/lib/late.so";
    EXPECT_NE(f.mapping, LocatedFrame::kUnmapped);
  }
  EXPECT_EQ(anon, 2u) << "one JIT frame per process";
  EXPECT_EQ(late, 2u) << "each process's frame located in the library";

  IntervalSymbolizer::Options o;
  o.perf_map_dir = dir_;
  IntervalSymbolizer symbolizer(o, &warnings);
  IntervalOutput out;
  symbolizer.Resolve(p, &out);
  ResolveOptions ro;
  ro.perf_map_dir = dir_;
  AddressSymbolizer symbols(AddressSymbolizer::Options{}, &warnings);
  const std::vector<ResolvedSample> recorded = ResolveSamples(raws, tracker, symbols, nullptr, ro);
  std::vector<std::vector<std::string>> agent_stacks, record_stacks;
  for (const InternedProfile::Sample& s : out.profile.samples) {
    std::vector<std::string> stack;
    for (const FrameView& f : Frames(out.profile, s)) {
      if (!f.kernel) stack.push_back(std::string(f.symbol) + "@" + std::string(f.dso) + (f.jit ? " jit" : ""));
    }
    agent_stacks.push_back(stack);
  }
  for (const ResolvedSample& s : recorded) {
    std::vector<std::string> stack;
    for (const ResolvedFrame& f : s.frames) stack.push_back(absl::StrCat(f.symbol, "@", f.dso, f.jit ? " jit" : ""));
    record_stacks.push_back(stack);
  }
  std::sort(agent_stacks.begin(), agent_stacks.end());
  std::sort(record_stacks.begin(), record_stacks.end());
  EXPECT_EQ(agent_stacks, record_stacks);
  ASSERT_EQ(agent_stacks.size(), 2u);
  EXPECT_EQ(agent_stacks[0][0], "JS:*hotA a.js:1@" + MapPath(kPidA) + " jit");
  EXPECT_EQ(agent_stacks[1][0], "JS:*other b.js:9@" + MapPath(kPidB) + " jit");
  EXPECT_EQ(agent_stacks[0][1], "[unknown]@/lib/late.so");
}

}  // namespace
}  // namespace ehprof
