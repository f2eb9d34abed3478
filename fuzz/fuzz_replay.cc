// libFuzzer target: the BPF walk compiled as C (bpf/host/walk_replay.c) on
// hostile captures: registers, stack bytes, mappings, exactness and the
// table map entries as ParseCapture takes them, so the walk reads hostile
// tables too.
//
// Input: a capture file. Seeds: testdata/seeds/capture. Checks (besides
// ASan/UBSan on the walk, whose memory safety the kernel's verifier proves
// for the BPF build): at most EHP_MAX_USER_FRAMES frames, the leaf frame is
// the leaf pc marked exact, a known stop reason, and no read reached past
// the captured bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "bpf/host/replay.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto c = ehprof::ParseCapture(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!c.ok()) return 0;
  auto r = ehprof::ReplayCapture(*c);
  Check(r.ok());  // a capture that parses replays
  Check(r->frames.size() <= EHP_MAX_USER_FRAMES);
  Check(r->stop < EHP_STOP_REASON_COUNT);
  const uint64_t pc = c->regs[EHP_REG_RIP];
  if (pc != 0) Check(!r->frames.empty() && r->frames[0] == (pc | EHP_FRAME_EXACT));
  const uint64_t sp = c->regs[EHP_REG_RSP];
  Check(r->read_end == 0 || (r->read_end > sp && r->read_end - sp <= c->stack.size()));
  return 0;
}
