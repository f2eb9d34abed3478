// libFuzzer target: a BPF ring-buffer record through DecodeEvent
// (agent/record/event_decoder.h), as the recorder decodes every record.
//
// Input: one record (struct ehp_event, then what its kind carries). Seeds:
// testdata/seeds/event (a sample, a --verify capture, a mapping). Checked:
// a decoded sample's frames are exactly the counts its header gives and
// fit in the input; a capture's stack fits in the input; nothing is read
// past the end (ASan).
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "agent/record/event_decoder.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const ehprof::DecodedEvent d = ehprof::DecodeEvent(data, size);
  using Kind = ehprof::DecodedEvent::Kind;
  if (d.kind == Kind::kSample) {
    const ehp_event& h = d.header;
    if (d.sample.kernel.size() != h.n_kernel || d.sample.user.size() != h.n_user ||
        d.sample.user_fp.size() != h.n_user_fp) {
      std::abort();
    }
    const size_t frames = d.sample.kernel.size() + d.sample.user.size() + d.sample.user_fp.size();
    if (sizeof(ehp_event) + frames * sizeof(uint64_t) > size || d.sample.comm.size() > EHP_COMM_LEN) std::abort();
  }
  if (d.kind == Kind::kVerify && sizeof(ehp_event) + sizeof(ehp_verify) + d.verify.stack.size() > size) {
    std::abort();
  }
  if (d.kind != Kind::kMalformed && size < sizeof(ehp_event)) std::abort();
  return 0;
}
