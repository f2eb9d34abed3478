// The BPF walk replayed in user space (bpf/host/) on the captures in
// testdata/captures/, each from its own table entries, compared frame by
// frame with libdwfl's unwind of the same stack on the recording machine and
// with the walk the kernel recorded; and the capture format's parser. No
// root, none of the captured files: links bpf_host alone
// (tests/replay_tier.cmake), so it passes on any machine.
#include "bpf/host/replay.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "bpf/host/capture.h"
#include "bpf/host/host_maps.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

std::string CapturePath(const std::string& name) {
  return std::string(EHPROF_CAPTURES_DIR) + "/" + name + ".capture";
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// What tests/test_figures.py reads (tests/test_support.h's PrintFigure).
void PrintFigure(const char* key, size_t value) {
  std::printf("figure: %s = %zu\n", key, value);
  std::fflush(stdout);
}

struct Replayed {
  Capture capture;
  ReplayResult result;
};

std::optional<Replayed> Replay(const std::string& name) {
  auto c = ReadCaptureFile(CapturePath(name));
  EXPECT_TRUE(c.ok()) << c.status();
  if (!c.ok()) return std::nullopt;
  auto r = ReplayCapture(*c);
  EXPECT_TRUE(r.ok()) << name << ": " << r.status();
  if (!r.ok()) return std::nullopt;
  return Replayed{*std::move(c), *std::move(r)};
}

uint64_t Addr(uint64_t frame) { return frame & EHP_FRAME_ADDR_MASK; }

const CaptureMapping* MappingOf(const Capture& c, uint64_t addr) {
  for (const CaptureMapping& m : c.mappings) {
    if (addr >= m.start && addr < m.end) return &m;
  }
  return nullptr;
}

// Every capture in testdata/captures/ agrees with the libdwfl frames it
// holds on every frame, and the replay finds exactly what the kernel
// recorded. Prints the count.
TEST(Replay, EveryCaptureAgreesWithLibdwflAndTheKernel) {
  std::vector<std::string> names;
  DIR* d = opendir(EHPROF_CAPTURES_DIR);
  ASSERT_NE(d, nullptr);
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (absl::EndsWith(n, ".capture")) names.push_back(n.substr(0, n.size() - 8));
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  ASSERT_GE(names.size(), 6u);
  size_t agree = 0, frames_agree = 0, frames = 0;
  for (const std::string& name : names) {
    auto r = Replay(name);
    if (!r) continue;
    EXPECT_FALSE(r->capture.libdwfl_frames.empty()) << name;
    EXPECT_EQ(r->result.stop, EHP_STOP_END_OF_STACK) << name << "\n" << FormatReplay(r->capture, r->result);
    EXPECT_TRUE(r->result.AgreesWithLibdwfl()) << name << "\n" << FormatReplay(r->capture, r->result);
    EXPECT_TRUE(r->result.MatchesRecorded(r->capture)) << name << "\n" << FormatReplay(r->capture, r->result);
    agree += r->result.AgreesWithLibdwfl();
    frames_agree += r->result.agree;
    frames += std::max(r->result.frames.size(), r->result.libdwfl.size());
  }
  std::printf("replayed %zu captures: %zu agree with libdwfl on every frame; frames %zu of %zu\n",
              names.size(), agree, frames_agree, frames);
  PrintFigure("captures", names.size());
  PrintFigure("captures_agree", agree);
  PrintFigure("frames_agree", frames_agree);
  PrintFigure("frames", frames);
}

// What each capture is there to show is in it.
TEST(Replay, ClangIsFortyFramesDeep) {
  auto r = Replay("clang_depth40");
  ASSERT_TRUE(r);
  EXPECT_GE(r->result.frames.size(), 40u);
}

TEST(Replay, SignalFrameIsCrossed) {
  auto r = Replay("signal_frame");
  ASSERT_TRUE(r);
  const auto& f = r->result.frames;
  // Past the leaf, an interrupted pc: the frame behind __restore_rt.
  EXPECT_TRUE(std::any_of(f.begin() + 1, f.end(), [](uint64_t v) { return (v & EHP_FRAME_EXACT) != 0; }));
}

// The leaf's rule, found by find_rule's C build in the capture's entries,
// is a PLT stub's (the CFA expression of .plt, compiled to a PLT kind).
TEST(Replay, LeafInThePltStub) {
  auto r = Replay("plt_stub");
  ASSERT_TRUE(r);
  const uint64_t leaf = Addr(r->result.frames.at(0));
  const CaptureMapping* m = MappingOf(r->capture, leaf);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->path, "@testdata/plt_spin");
  ASSERT_TRUE(m->table_id);
  HostMaps maps;
  for (const CaptureEntry& e : r->capture.entries) {
    ASSERT_TRUE(maps.map(e.map).Write(e.key, e.offset, e.bytes.data(), e.bytes.size()).ok());
  }
  const std::optional<ehp_rule> rule = maps.FindRule(*m->table_id, leaf - m->bias);
  ASSERT_TRUE(rule);
  EXPECT_TRUE(rule->cfa_kind == EHP_CFA_PLT_LIT11 || rule->cfa_kind == EHP_CFA_PLT_LIT10) << int{rule->cfa_kind};
}

TEST(Replay, JitFrameByFramePointer) {
  auto r = Replay("jit_frame");
  ASSERT_TRUE(r);
  const CaptureMapping* m = MappingOf(r->capture, Addr(r->result.frames.at(0)));
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->path, "//anon");
  // Out of the JIT code through rbp, then CFI again.
  EXPECT_TRUE(r->result.frames.at(1) & EHP_FRAME_FP);
  EXPECT_GE(r->result.frames.size(), 4u);
}

// The walk reads its rules from the capture's entries: without the rows
// it stops where the kernel's did not.
TEST(Replay, TheWalkReadsTheCapturesTables) {
  auto c = ReadCaptureFile(CapturePath("clang_depth40"));
  ASSERT_TRUE(c.ok()) << c.status();
  std::erase_if(c->entries, [](const CaptureEntry& e) { return e.map == EHP_REPLAY_MAP_ROWS; });
  auto r = ReplayCapture(*c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_FALSE(r->MatchesRecorded(*c));
  EXPECT_LT(r->frames.size(), c->bpf_frames.size());
}

// A stack cut short ends the walk with a read fault where the bytes end:
// the shim's reads fail outside the capture, as the kernel's do.
TEST(Replay, ShortStackStopsTheWalk) {
  auto c = ReadCaptureFile(CapturePath("python3.11"));
  ASSERT_TRUE(c.ok()) << c.status();
  c->stack.resize(256);
  auto r = ReplayCapture(*c);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop, EHP_STOP_READ_FAULT);
  EXPECT_LT(r->frames.size(), c->bpf_frames.size());
  EXPECT_LE(r->read_end, c->regs[EHP_REG_RSP] + 256);
  // Up to the fault, the frames libdwfl found in the whole stack.
  EXPECT_EQ(r->agree, r->frames.size());
}

TEST(CaptureFormat, RoundTrips) {
  auto c = ReadCaptureFile(CapturePath("jit_frame"));
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string text = FormatCapture(*c);
  EXPECT_EQ(text, ReadText(CapturePath("jit_frame")));
  auto again = ParseCapture(text, "again");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(FormatCapture(*again), text);
}

TEST(CaptureFormat, BadInputIsAnErrorNamingFileAndLine) {
  const std::string good = ReadText(CapturePath("jit_frame"));
  struct Case {
    std::string from, to, want;
  };
  const std::vector<Case> cases = {
      {"ehprof-capture 2", "ehprof-capture 1", "x.capture:1: version 1, without the walk's tables"},
      {"ehprof-capture 2", "ehprof-capture 3", "x.capture:1: version '3'"},
      {"exact 1", "exact 7", "x.capture:4: exact is 0 or 1"},
      {"regs ", "regs zz ", "x.capture:5: regs: 'zz' is not a hex number"},
      {"\nwalk 1", "\nwalk 99", "walk starts with a stop reason"},
      {"\nend\n", "\n", "where 'end' belongs"},
      {"\nend\n", "\nend\nmore\n", "text after 'end'"},
      {"stack ", "stack 99999999", "stack length is a number up to 65536"},
      {"mapping ", "mapping 5 4 0 - - /x\nmapping ", "a mapping ends before it starts"},
      {"mapping ", "mapping 4 5 0 fffff - /x\nmapping ", "a table id is hex, below 4096"},
      {"\nwalk", "\nbogus 1\nwalk", "'bogus' where a mapping or 'walk' belongs"},
      {"\nlibdwfl ", "\nlibdwfl zz ", "libdwfl: 'zz' is not a hex number"},
      {"\nentry ", "\nentry stats 0 0 00\nentry ", "an entry of 'stats', which is no table map"},
      {"\nentry ", "\nentry rules 0 8 0011223344556677889900\nentry ", "an entry past rules's"},
      {"\nentry ", "\nentry pages 10000 0 00\nentry ", "an entry past pages's 65536 keys"},
      {"\nentry ", "\nentry rules 0 0 0\nentry ", "an entry's bytes are hex"},
      {"\nstack ", "\nhello\nstack ", "'hello' where an entry or 'stack' belongs"},
  };
  for (const Case& k : cases) {
    const std::string bad = absl::StrReplaceAll(good, {{k.from, k.to}});
    ASSERT_NE(bad, good) << k.from;
    auto c = ParseCapture(bad, "x.capture");
    ASSERT_FALSE(c.ok()) << k.from;
    EXPECT_TRUE(absl::StrContains(c.status().message(), k.want)) << c.status();
    EXPECT_TRUE(absl::StartsWith(c.status().message(), "x.capture:")) << c.status();
  }
  EXPECT_FALSE(ParseCapture("", "x.capture").ok());
  EXPECT_FALSE(ParseCapture(good.substr(0, good.size() / 2), "x.capture").ok());
}

}  // namespace
}  // namespace ehprof
