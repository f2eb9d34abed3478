// The agent's memory plan without BPF: the RSS breakdown from smaps, the
// ring buffer size, and the symbolizer's per-file budget (files evicted
// least recently used first, never one the last interval used, never all
// at once).
#include <string>

#include "agent/continuous/agent_memory.h"
#include "agent/continuous/interval_symbolizer.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"

namespace ehprof {
namespace {

using testing::FindSymbol;
using testing::SymbolRange;
using testing::TestdataPath;

TEST(MemoryBreakdown, SplitsSmapsIntoHeapRingBufferAndFiles) {
  const std::string smaps =
      "55d0c0000000-55d0c0100000 r-xp 00000000 fe:01 1234 /usr/bin/ehprof\n"
      "Size:               1024 kB\n"
      "Rss:                 800 kB\n"
      "55d0c1000000-55d0c3000000 rw-p 00000000 00:00 0 [heap]\n"
      "Rss:               20000 kB\n"
      "7f0000000000-7f0001000000 r--p 00000000 00:0f 77 anon_inode:bpf-map\n"
      "Rss:                4096 kB\n"
      "7f0002000000-7f0003000000 rw-p 00000000 00:00 0 \n"
      "Rss:                3000 kB\n";
  const MemoryBreakdown m = ParseMemoryBreakdown(smaps, 15000ull << 10);
  EXPECT_EQ(m.rss, (800ull + 20000 + 4096 + 3000) << 10);
  EXPECT_EQ(m.files, 800ull << 10);
  EXPECT_EQ(m.ring_buffer, 4096ull << 10);
  EXPECT_EQ(m.heap_in_use, 15000ull << 10);
  EXPECT_EQ(m.heap_free, 8000ull << 10);
  // In use beyond what is resident (untouched pages) is capped.
  EXPECT_EQ(ParseMemoryBreakdown(smaps, 1ull << 40).heap_free, 0u);
}

TEST(MemoryBreakdown, ReadsThisProcess) {
  const MemoryBreakdown m = ReadMemoryBreakdown();
  EXPECT_GT(m.rss, 0u);
  EXPECT_GT(m.files, 0u);  // this test's own code
  EXPECT_EQ(m.rss, m.files + m.ring_buffer + m.heap_in_use + m.heap_free);
}

TEST(AgentRingBytes, HalfASecondOfSamplesBetweenTwoAndSixteenMiB) {
  EXPECT_EQ(AgentRingBytes(2, 99, false), 2u << 20);
  EXPECT_EQ(AgentRingBytes(64, 99, false), 8u << 20);     // 6.5 MB needed
  EXPECT_EQ(AgentRingBytes(256, 999, false), 16u << 20);  // capped
  EXPECT_EQ(AgentRingBytes(2, 99, true), 16u << 20);      // off-CPU bursts
}

// One user frame at `name`'s address in each of `files`, one service.
IntervalProfile ProfileAt(const std::vector<std::string>& files, const std::string& name) {
  IntervalProfile p;
  p.strings = {"svc", "comm"};
  for (const std::string& file : files) {
    std::optional<SymbolRange> sym = FindSymbol(file, name);
    EXPECT_TRUE(sym) << file;
    LocatedMapping m;
    m.path = m.symbol_file = file;
    m.start = 0x400000;
    m.limit = 0x800000;
    p.mappings.push_back(m);
    p.frames.push_back({static_cast<uint32_t>(p.mappings.size() - 1), sym ? sym->addr : 0, 0x401000});
    IntervalProfile::Key key;
    key.frames = {static_cast<uint32_t>(p.frames.size() - 1)};
    p.counts[key] = {1, 0};
  }
  return p;
}

std::vector<std::string> Symbols(const IntervalOutput& out) {
  std::vector<std::string> names;
  for (const auto& [service, samples] : out.by_service) {
    for (uint32_t i : samples) {
      const std::vector<std::string_view> stack = FunctionNames(out.profile, out.profile.samples[i]);
      if (!stack.empty()) names.emplace_back(stack.back());
    }
  }
  return names;
}

IntervalOutput Resolve(IntervalSymbolizer& symbolizer, const IntervalProfile& p) {
  IntervalOutput out;
  symbolizer.Resolve(p, &out);
  return out;
}

TEST(IntervalSymbolizer, EvictsTheLeastRecentlyUsedFilesFirst) {
  const std::vector<std::string> files = {TestdataPath("deep_recursion"), TestdataPath("churn_child"),
                                          TestdataPath("exec_child")};
  IntervalSymbolizer::Options o;
  o.max_files = 2;
  Warnings warnings;
  IntervalSymbolizer symbolizer(o, &warnings);
  // Three files over two intervals with room for two: the oldest goes.
  Resolve(symbolizer, ProfileAt({files[0]}, "main"));
  auto out = Resolve(symbolizer, ProfileAt({files[1], files[2]}, "main"));
  EXPECT_EQ(Symbols(out), std::vector<std::string>({"main", "main"}));
  IntervalSymbolizer::Usage u = symbolizer.usage();
  EXPECT_EQ(u.files, 2u);
  EXPECT_EQ(u.files_evicted, 1u);
  EXPECT_GT(u.symbol_bytes, 0u);
  EXPECT_GT(u.address_bytes, 0u);
  EXPECT_EQ(u.addresses, 3u);

  // A budget asking for everything takes only what the last interval did
  // not use.
  Resolve(symbolizer, ProfileAt({files[2]}, "main"));
  const auto [n, bytes] = symbolizer.EvictFor(UINT64_MAX);
  EXPECT_EQ(n, 1u);  // files[1]; files[2] stays
  u = symbolizer.usage();
  EXPECT_EQ(u.files, 1u);
  EXPECT_EQ(u.files_evicted, 2u);
  EXPECT_EQ(symbolizer.EvictFor(UINT64_MAX).first, 0u);
  // An evicted file is read again when it comes back, with the same names.
  out = Resolve(symbolizer, ProfileAt({files[0], files[1]}, "main"));
  EXPECT_EQ(Symbols(out), std::vector<std::string>({"main", "main"}));
  EXPECT_EQ(symbolizer.usage().files, 2u);
}

}  // namespace
}  // namespace ehprof
