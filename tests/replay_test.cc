// The BPF walk replayed in user space (agent/replay/) on the captures in
// testdata/captures/, each compared frame by frame with libdwfl's unwind of
// the same stack bytes and with the walk the kernel recorded; and the
// capture format's parser. No root.
#include "agent/replay/replay.h"

#include <dirent.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "agent/replay/capture.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "unwind_tables/elf_file.h"

namespace ehprof {
namespace {

std::string CapturePath(const std::string& name) {
  return testing::SourcePath("testdata/captures/" + name + ".capture");
}

ReplayOptions Options() {
  ReplayOptions o;
  o.testdata_dir = testing::TestdataPath("");
  return o;
}

struct Replayed {
  Capture capture;
  ReplayResult result;
};

// Replays testdata/captures/NAME.capture; the test fails (with the replay's
// error, which names a file whose build-id differs) when it cannot.
std::optional<Replayed> Replay(const std::string& name) {
  auto c = ReadCaptureFile(CapturePath(name));
  EXPECT_TRUE(c.ok()) << c.status();
  if (!c.ok()) return std::nullopt;
  auto r = ReplayCapture(*c, Options());
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

// Every capture in testdata/captures/ agrees with libdwfl on every frame,
// and the replay finds exactly what the kernel recorded. Prints the count.
TEST(Replay, EveryCaptureAgreesWithLibdwflAndTheKernel) {
  std::vector<std::string> names;
  DIR* d = opendir(testing::SourcePath("testdata/captures").c_str());
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
    EXPECT_EQ(r->result.stop, EHP_STOP_END_OF_STACK) << name << "\n" << FormatReplay(r->capture, r->result);
    EXPECT_TRUE(r->result.AgreesWithLibdwfl()) << name << "\n" << FormatReplay(r->capture, r->result);
    EXPECT_TRUE(r->result.MatchesRecorded(r->capture)) << name << "\n" << FormatReplay(r->capture, r->result);
    agree += r->result.AgreesWithLibdwfl();
    for (const std::string& note : r->result.notes) std::printf("%s: note: %s\n", name.c_str(), note.c_str());
    frames_agree += r->result.agree;
    frames += std::max(r->result.frames.size(), r->result.libdwfl.size());
  }
  std::printf("replayed %zu captures: %zu agree with libdwfl on every frame; frames %zu of %zu\n",
              names.size(), agree, frames_agree, frames);
  testing::PrintFigure("captures", names.size());
  testing::PrintFigure("captures_agree", agree);
  testing::PrintFigure("frames_agree", frames_agree);
  testing::PrintFigure("frames", frames);
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

TEST(Replay, LeafInThePltStub) {
  auto r = Replay("plt_stub");
  ASSERT_TRUE(r);
  const uint64_t leaf = Addr(r->result.frames.at(0));
  const CaptureMapping* m = MappingOf(r->capture, leaf);
  ASSERT_NE(m, nullptr);
  ASSERT_EQ(m->path, "@testdata/plt_spin");
  auto elf = ElfFile::Open(testing::TestdataPath("plt_spin"));
  ASSERT_TRUE(elf.ok());
  auto section = elf->Section(".plt");
  ASSERT_TRUE(section.ok() && section->has_value());
  const ElfSection* plt = &**section;
  EXPECT_GE(leaf - m->bias, plt->addr);
  EXPECT_LT(leaf - m->bias, plt->addr + plt->size);
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

TEST(Replay, ABuildIdThatDiffersIsAnErrorNamingTheFile) {
  auto c = ReadCaptureFile(CapturePath("signal_frame"));
  ASSERT_TRUE(c.ok()) << c.status();
  for (CaptureMapping& m : c->mappings) {
    if (absl::EndsWith(m.path, "libc.so.6")) m.build_id = "00112233";
  }
  auto r = ReplayCapture(*c, Options());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(r.status().message(), "libc.so.6: build-id ")) << r.status();
  EXPECT_TRUE(absl::StrContains(r.status().message(), "00112233 in the capture")) << r.status();
}

// A file that differs but holds none of the capture's frames (ld.so here)
// is left out and said so; the walk is the same.
TEST(Replay, AFileWithoutFramesThatDiffersIsANote) {
  auto c = ReadCaptureFile(CapturePath("signal_frame"));
  ASSERT_TRUE(c.ok()) << c.status();
  for (CaptureMapping& m : c->mappings) {
    if (absl::EndsWith(m.path, "ld-linux-x86-64.so.2")) m.build_id = "00112233";
  }
  auto r = ReplayCapture(*c, Options());
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->notes.size(), 1u);
  EXPECT_TRUE(absl::StrContains(r->notes[0], "ld-linux-x86-64.so.2: build-id ")) << r->notes[0];
  EXPECT_TRUE(absl::StrContains(r->notes[0], "no frame of the capture is in it")) << r->notes[0];
  EXPECT_TRUE(r->MatchesRecorded(*c));
  EXPECT_TRUE(r->AgreesWithLibdwfl());
}

// A stack cut short ends both walks with a read fault where the bytes end:
// the shim's reads fail outside the capture, as the kernel's do.
TEST(Replay, ShortStackStopsBothWalks) {
  auto c = ReadCaptureFile(CapturePath("python3.11"));
  ASSERT_TRUE(c.ok()) << c.status();
  c->stack.resize(256);
  auto r = ReplayCapture(*c, Options());
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->stop, EHP_STOP_READ_FAULT);
  EXPECT_LT(r->frames.size(), c->bpf_frames.size());
  EXPECT_LE(r->read_end, c->regs[EHP_REG_RSP] + 256);
  EXPECT_EQ(r->agree, std::min(r->frames.size(), r->libdwfl.size()));
}

TEST(CaptureFormat, RoundTrips) {
  auto c = ReadCaptureFile(CapturePath("jit_frame"));
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string text = FormatCapture(*c);
  EXPECT_EQ(text, testing::ReadFile(CapturePath("jit_frame")));
  auto again = ParseCapture(text, "again");
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(FormatCapture(*again), text);
}

TEST(CaptureFormat, BadInputIsAnErrorNamingFileAndLine) {
  const std::string good = testing::ReadFile(CapturePath("jit_frame"));
  struct Case {
    std::string from, to, want;
  };
  const std::vector<Case> cases = {
      {"ehprof-capture 1", "ehprof-capture 2", "x.capture:1: version '2'"},
      {"exact 1", "exact 7", "x.capture:4: exact is 0 or 1"},
      {"regs ", "regs zz ", "x.capture:5: regs: 'zz' is not a hex number"},
      {"\nwalk 1", "\nwalk 99", "walk starts with a stop reason"},
      {"\nend\n", "\n", "where 'end' belongs"},
      {"\nend\n", "\nend\nmore\n", "text after 'end'"},
      {"stack ", "stack 99999999", "stack length is a number up to 65536"},
      {"mapping ", "mapping 5 4 0 - /x\nmapping ", "a mapping ends before it starts"},
      {"\nwalk", "\nbogus 1\nwalk", "'bogus' where a mapping or 'walk' belongs"},
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
