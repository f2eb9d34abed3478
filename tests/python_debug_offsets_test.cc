// agent/python/debug_offsets.h on _Py_DebugOffsets blocks: the prefix of
// Debian forky's python3.14 (3.14.8, its .PyRuntime bytes) read into the
// walk's offsets, and that block patched (cookie, version, free-threaded
// flag, a size, an offset past its size, an unknown version) refused with
// one line naming what was wrong.
#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "agent/python/debug_offsets.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

constexpr uint32_t kVersion = 0x30e08f0;  // 3.14.8 final

// Debian forky's python3.14 3.14.8: the u64s after the cookie.
std::vector<uint8_t> Block314() {
  const uint64_t words[] = {
      kVersion, 0,
      316616, 784, 808,                                                    // runtime_state
      225864, 7280, 7272, 7344, 7360, 7408, 7688, 7672, 7680, 16, 7784, 0,  // interpreter_state
      7800, 7792, 7992, 0,
      832, 0, 8, 16, 72, 152, 160, 232, 32,  // thread_state
      88, 8, 0, 56, 80, 74, 64, 0,           // interpreter_frame
  };
  std::vector<uint8_t> b(kDebugOffsetsSize);
  std::memcpy(b.data(), "xdebugpy", 8);
  std::memcpy(b.data() + 8, words, sizeof(words));
  return b;
}

void SetU64(std::vector<uint8_t>* b, size_t at, uint64_t v) { std::memcpy(b->data() + at, &v, 8); }

std::string Refusal(const std::vector<uint8_t>& b, uint32_t version = kVersion) {
  auto p = LayoutFromDebugOffsets(b, version);
  EXPECT_FALSE(p.ok());
  const std::string why(p.status().message());
  EXPECT_FALSE(absl::StrContains(why, "\n")) << why;
  return why;
}

TEST(PythonDebugOffsets, Python314FromItsOwnBlock) {
  auto p = LayoutFromDebugOffsets(Block314(), kVersion);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->interp_head, 808u);
  EXPECT_EQ(p->interp_next, 7272u);
  EXPECT_EQ(p->interp_threads, 7344u);
  EXPECT_EQ(p->tstate_next, 8u);
  EXPECT_EQ(p->tstate_frame, 72u);
  EXPECT_EQ(p->tstate_thread_id, 152u);
  EXPECT_EQ(p->tstate_datastack, 232u);
  EXPECT_EQ(p->cframe_frame, EHP_PY_NO_CFRAME);
  EXPECT_EQ(p->frame_previous, 8u);
  EXPECT_EQ(p->frame_code, 0u);
  EXPECT_EQ(p->frame_instr, 56u);
  EXPECT_EQ(p->frame_entry, 74u);
  EXPECT_EQ(p->frame_read, 80u);  // through instr_ptr and the owner byte
  EXPECT_EQ(p->layout, EHP_PY_CSTACK_OWNER);
  EXPECT_EQ(p->owner_cstack, 3u);  // FRAME_OWNED_BY_INTERPRETER
  EXPECT_EQ(p->code_tags, 3u);     // f_executable is a _PyStackRef
}

TEST(PythonDebugOffsets, PatchedOrUnknownBlocksAreRefused) {
  std::vector<uint8_t> b = Block314();
  b[0] = 'X';
  EXPECT_TRUE(absl::StrContains(Refusal(b), "cookie")) << Refusal(b);

  b = Block314();
  EXPECT_TRUE(absl::StrContains(Refusal(b, 0x30d00f0), "is not Py_Version"));

  b = Block314();
  SetU64(&b, 16, 1);
  EXPECT_TRUE(absl::StrContains(Refusal(b), "free-threaded"));

  b = Block314();  // a 3.15 block ehprof has not seen
  SetU64(&b, 8, 0x30f00a0);
  EXPECT_TRUE(absl::StrContains(Refusal(b, 0x30f00a0), "does not know"));

  b = Block314();
  SetU64(&b, 176, 0);  // PyThreadState's size
  EXPECT_TRUE(absl::StrContains(Refusal(b), "PyThreadState a size of 0"));

  b = Block314();
  SetU64(&b, 248, uint64_t{1} << 40);  // _PyInterpreterFrame's size
  EXPECT_TRUE(absl::StrContains(Refusal(b), "_PyInterpreterFrame a size of"));

  b = Block314();
  SetU64(&b, 176 + 8 * 5, 900);  // thread_id past PyThreadState's 832 bytes
  EXPECT_TRUE(absl::StrContains(Refusal(b), "PyThreadState field at 900"));

  b = Block314();
  SetU64(&b, 176 + 8 * 7, 816);  // datastack_chunk: _top and _limit past the end
  EXPECT_TRUE(absl::StrContains(Refusal(b), "field at 816"));

  b = Block314();
  SetU64(&b, 24 + 16, ~uint64_t{0});  // interpreters_head
  EXPECT_TRUE(absl::StrContains(Refusal(b), "_PyRuntimeState field"));

  b = Block314();  // a frame larger than the walk reads, its owner at its end
  SetU64(&b, 248, 1000);
  SetU64(&b, 248 + 8 * 5, 900);
  EXPECT_TRUE(absl::StrContains(Refusal(b), "frame fields end at 901"));

  b = Block314();
  b.resize(100);
  EXPECT_FALSE(LayoutFromDebugOffsets(b, kVersion).ok());
}

}  // namespace
}  // namespace ehprof
