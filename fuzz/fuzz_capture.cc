// libFuzzer target: text through ParseCapture (bpf/host/capture.h), the
// format `ehprof record --save-captures` writes and `ehprof replay` and the
// replay test read.
//
// Input: a capture file. Seeds: testdata/seeds/capture (three of
// testdata/captures). Checks: an error names the file; whatever parses
// formats to text that parses to the same capture, and formats to the same
// text again; the parsed sizes stay within the ABI's bounds.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "bpf/host/capture.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

bool Same(const ehprof::Capture& a, const ehprof::Capture& b) {
  if (a.comm != b.comm || a.pid != b.pid || a.exact != b.exact || a.bpf_stop != b.bpf_stop ||
      a.bpf_frames != b.bpf_frames || a.stack != b.stack || a.mappings.size() != b.mappings.size()) {
    return false;
  }
  for (size_t i = 0; i < a.mappings.size(); ++i) {
    const auto &x = a.mappings[i], &y = b.mappings[i];
    if (x.start != y.start || x.end != y.end || x.bias != y.bias || x.build_id != y.build_id ||
        x.path != y.path) {
      return false;
    }
  }
  for (int r = 0; r <= EHP_REG_RIP; ++r) {
    if (a.regs[r] != b.regs[r]) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto c = ehprof::ParseCapture(text, "fuzz.capture");
  if (!c.ok()) {
    Check(c.status().message().find("fuzz.capture:") == 0);
    return 0;
  }
  Check(c->mappings.size() <= EHP_MAX_MAPPINGS && c->bpf_frames.size() <= EHP_MAX_USER_FRAMES &&
        c->stack.size() <= EHP_VERIFY_STACK_MAX);
  const std::string once = ehprof::FormatCapture(*c);
  auto again = ehprof::ParseCapture(once, "formatted");
  Check(again.ok() && Same(*c, *again));
  Check(ehprof::FormatCapture(*again) == once);
  return 0;
}
