// A capture completed on the recording machine (agent/replay/
// capture_tables.h): a file holding one of its frames whose build-id
// differs from the capture's is an error naming it; one holding none is
// left without its table, in a note; a completed capture replays from its
// own entries as over the whole tables. Uses testdata's programs (built in
// this tree) and testdata/captures/plt_stub.capture, no root.
#include "agent/replay/capture_tables.h"

#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "gtest/gtest.h"
#include "tests/test_support.h"
#include "agent/process/vdso_file.h"
#include "elf/elf_file.h"

namespace ehprof {
namespace {

using testing::TestdataPath;

// plt_stub.capture with only its plt_spin mapping, naming this tree's
// plt_spin and its build-id: the leaf is in it.
Capture PltSpinOnly() {
  auto c = ReadCaptureFile(testing::SourcePath("testdata/captures/plt_stub.capture"));
  EXPECT_TRUE(c.ok()) << c.status();
  std::vector<CaptureMapping> keep;
  for (CaptureMapping m : c->mappings) {
    if (m.path != "@testdata/plt_spin") continue;
    m.path = TestdataPath("plt_spin");
    auto elf = ElfFile::Open(m.path);
    EXPECT_TRUE(elf.ok()) << elf.status();
    m.build_id = elf->BuildId();
    keep.push_back(m);
  }
  EXPECT_FALSE(keep.empty());
  c->mappings = keep;
  c->entries.clear();
  c->libdwfl_frames.clear();
  return *c;
}

TEST(CaptureTables, ABuildIdThatDiffersUnderAFrameIsAnErrorNamingTheFile) {
  Capture c = PltSpinOnly();
  for (CaptureMapping& m : c.mappings) m.build_id = "00112233";
  CaptureTables tables;
  absl::Status s = tables.Assign(&c, nullptr);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(absl::StrContains(s.message(), "plt_spin: build-id ")) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "00112233 in the capture")) << s;
}

TEST(CaptureTables, ABuildIdThatDiffersWithoutFramesIsANote) {
  Capture c = PltSpinOnly();
  CaptureMapping other;
  other.start = 0x10000;  // below every frame
  other.end = 0x20000;
  other.path = TestdataPath("sig_handler");
  other.build_id = "00112233";
  c.mappings.push_back(other);
  CaptureTables tables;
  std::vector<std::string> notes;
  ASSERT_TRUE(tables.Assign(&c, &notes).ok());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(absl::StrContains(notes[0], "sig_handler: build-id ")) << notes[0];
  EXPECT_TRUE(absl::StrContains(notes[0], "no frame of the capture is in it")) << notes[0];
  EXPECT_TRUE(c.mappings[0].table_id);
  EXPECT_FALSE(c.mappings[1].table_id);
}

// Completed, the capture holds libdwfl's frames and the entries its walk
// reads, and replays from them alone as it walked over the whole tables.
TEST(CaptureTables, ACompletedCaptureReplaysFromItsEntries) {
  Capture c = PltSpinOnly();
  CaptureTables tables;
  auto done = CompleteCapture(tables, c);
  ASSERT_TRUE(done.ok()) << done.status();
  EXPECT_FALSE(done->entries.empty());
  EXPECT_FALSE(done->libdwfl_frames.empty());
  EXPECT_LE(done->stack.size(), c.stack.size());
  auto whole = tables.Replay(*done);
  auto stored = ReplayCapture(*done);
  ASSERT_TRUE(whole.ok() && stored.ok());
  EXPECT_EQ(stored->frames, whole->frames);
  EXPECT_EQ(stored->stop, whole->stop);
  EXPECT_EQ(stored->libdwfl, whole->libdwfl);
  EXPECT_GE(stored->frames.size(), 1u);
}

// The vDSO has no file: its table is built from this process's own image
// (every process's on the machine), under the same build-id check.
TEST(CaptureTables, TheVdsoGetsTheTableOfThisMachinesImage) {
  std::vector<uint8_t> image = ReadOwnVdso();
  if (image.empty()) GTEST_SKIP() << "no [vdso] mapped in this process";
  auto elf = ElfFile::FromBytes("[vdso]", image);
  ASSERT_TRUE(elf.ok()) << elf.status();
  Capture c = PltSpinOnly();
  CaptureMapping vdso;
  vdso.start = 0x10000;  // below every frame
  vdso.end = vdso.start + image.size();
  vdso.bias = vdso.start;
  vdso.path = "[vdso]";
  vdso.build_id = elf->BuildId();
  c.mappings.push_back(vdso);
  CaptureTables tables;
  std::vector<std::string> notes;
  ASSERT_TRUE(tables.Assign(&c, &notes).ok());
  EXPECT_TRUE(notes.empty());
  EXPECT_TRUE(c.mappings.back().table_id);

  c.mappings.back().build_id = "00112233";
  ASSERT_TRUE(tables.Assign(&c, &notes).ok());
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(absl::StrContains(notes[0], "[vdso]: build-id ")) << notes[0];
  EXPECT_FALSE(c.mappings.back().table_id);
}

}  // namespace
}  // namespace ehprof
