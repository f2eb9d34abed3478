// libFuzzer target: the BPF walk compiled as C (agent/replay/walk_replay.c)
// on hostile captures: registers, stack bytes, mappings and exactness as
// ParseCapture takes them, with tables built from this machine's files.
//
// Input: a capture file. Seeds: testdata/seeds/capture. Only captures whose
// files are the seeds' (testdata's programs, libc, ld.so) are walked, so
// every input reuses tables built once (a Replayer kept across inputs) and
// nothing else on the machine is opened. Checks (besides ASan/UBSan on the
// walk, whose memory safety the kernel's verifier proves for the BPF
// build): at most EHP_MAX_USER_FRAMES frames, the leaf frame is the leaf pc
// marked exact, a known stop reason, and no read reached past the captured
// bytes.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "agent/replay/replay.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

bool SeedFile(const std::string& path) {
  return absl::StartsWith(path, ehprof::kTestdataPrefix) || path == "//anon" || path == "[vdso]" ||
         path == "/usr/lib/x86_64-linux-gnu/libc.so.6" ||
         path == "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2";
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static ehprof::Replayer* replayer = [] {
    ehprof::ReplayOptions o;
    o.testdata_dir = EHPROF_TESTDATA_DIR;
    o.libdwfl = false;
    return new ehprof::Replayer(o);
  }();
  auto c = ehprof::ParseCapture(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  if (!c.ok() || c->mappings.size() > 16) return 0;
  for (const ehprof::CaptureMapping& m : c->mappings) {
    if (!SeedFile(m.path) || absl::StrContains(m.path, "..")) return 0;
  }
  auto r = replayer->Replay(*c);
  if (!r.ok()) return 0;  // a build-id or file the machine does not have
  Check(r->frames.size() <= EHP_MAX_USER_FRAMES);
  Check(r->stop < EHP_STOP_REASON_COUNT);
  const uint64_t pc = c->regs[EHP_REG_RIP];
  if (pc != 0) Check(!r->frames.empty() && r->frames[0] == (pc | EHP_FRAME_EXACT));
  const uint64_t sp = c->regs[EHP_REG_RSP];
  Check(r->read_end == 0 || (r->read_end > sp && r->read_end - sp <= c->stack.size()));
  return 0;
}
