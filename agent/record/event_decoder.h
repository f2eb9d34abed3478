// The BPF program's ring-buffer records as values: a pure function of the
// bytes (no session, no process, no clock), so every record the recorder
// acts on is decoded the same way whether it came from the ring buffer or
// from a file of recorded events, and is tested without root.
#ifndef EHPROF_AGENT_RECORD_EVENT_DECODER_H_
#define EHPROF_AGENT_RECORD_EVENT_DECODER_H_

#include <cstddef>
#include <cstdint>
#include <vector>

#include "agent/record/raw_sample.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

struct DecodedEvent {
  enum class Kind {
    kSample,      // sample
    kVerify,      // verify: the capture of the sample sent before it
    kExec,        // header.pid exec'd
    kExit,        // header.pid exited
    kFork,        // header.pid forked header.addr
    kUnknownPid,  // a sampled process user space has no entry for
    kUnknownPc,   // header.addr outside every mapping the entry has
    kNewFile,     // header.pid mapped code of a file not published at header.addr
    kMapping,     // mapping: one the kernel side added
    kDeferred,    // deferred: the walk state of the sample sent after it
    kOther,       // a kind this build does not know: ignored
    kMalformed,   // shorter than its header says: ignored
  };
  Kind kind = Kind::kMalformed;
  ehp_event header{};  // all but kMalformed under sizeof(ehp_event)
  RawSample sample;
  VerifyCapture verify;  // its sample index unset (the recorder matches it)
  ehp_mapping_event mapping{};
  DeferredCapture deferred;
};

// One ring-buffer record (struct ehp_event, then what its kind carries).
DecodedEvent DecodeEvent(const void* data, size_t size);

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_EVENT_DECODER_H_
