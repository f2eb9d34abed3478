#include "agent/record/event_decoder.h"

#include <cstring>
#include <utility>

namespace ehprof {
namespace {

using Kind = DecodedEvent::Kind;

// struct ehp_event, then n_kernel + n_user + n_user_fp frames.
bool DecodeSample(const uint8_t* data, size_t size, DecodedEvent* out) {
  const ehp_event& ev = out->header;
  const size_t n = size_t{ev.n_kernel} + ev.n_user + ev.n_user_fp;
  if (sizeof(ev) + n * sizeof(uint64_t) > size) return false;
  RawSample& s = out->sample;
  s.pid = ev.pid;
  s.tid = ev.tid;
  s.cpu = ev.cpu;
  s.time_ns = ev.time_ns;
  s.comm.assign(ev.comm, strnlen(ev.comm, sizeof(ev.comm)));
  s.stop_reason = ev.stop_reason;
  s.fp_stop_reason = ev.fp_stop_reason;
  s.flags = ev.flags;
  s.bpf_ns = ev.bpf_ns;
  if (ev.flags & EHP_SAMPLE_OFF_CPU) s.off_cpu_ns = ev.addr;
  std::vector<uint64_t> frames(n);
  if (n > 0) std::memcpy(frames.data(), data + sizeof(ev), n * sizeof(uint64_t));
  s.kernel.assign(frames.begin(), frames.begin() + ev.n_kernel);
  s.user.assign(frames.begin() + ev.n_kernel, frames.begin() + ev.n_kernel + ev.n_user);
  s.user_fp.assign(frames.begin() + ev.n_kernel + ev.n_user, frames.end());
  return true;
}

// struct ehp_event, struct ehp_verify, then stack_len bytes of stack.
bool DecodeVerify(const uint8_t* data, size_t size, DecodedEvent* out) {
  ehp_verify v;
  if (size < sizeof(ehp_event) + sizeof(v)) return false;
  std::memcpy(&v, data + sizeof(ehp_event), sizeof(v));
  if (sizeof(ehp_event) + sizeof(v) + v.stack_len > size) return false;
  std::memcpy(out->verify.regs, v.regs, sizeof(out->verify.regs));
  out->verify.exact = v.leaf_exact != 0;
  const uint8_t* stack = data + sizeof(ehp_event) + sizeof(v);
  out->verify.stack.assign(stack, stack + v.stack_len);
  return true;
}

// struct ehp_event, struct ehp_deferred, then stack_len bytes of stack.
bool DecodeDeferred(const uint8_t* data, size_t size, DecodedEvent* out) {
  ehp_deferred& d = out->deferred.state;
  if (size < sizeof(ehp_event) + sizeof(d)) return false;
  std::memcpy(&d, data + sizeof(ehp_event), sizeof(d));
  if (d.stack_len > EHP_DEFERRED_STACK_MAX || sizeof(ehp_event) + sizeof(d) + d.stack_len > size) return false;
  const uint8_t* stack = data + sizeof(ehp_event) + sizeof(d);
  out->deferred.stack.assign(stack, stack + d.stack_len);
  return true;
}

}  // namespace

DecodedEvent DecodeEvent(const void* data, size_t size) {
  DecodedEvent out;
  if (size < sizeof(ehp_event)) return out;
  const auto* bytes = static_cast<const uint8_t*>(data);
  std::memcpy(&out.header, bytes, sizeof(out.header));
  bool ok = true;
  switch (out.header.kind) {
    case EHP_EVENT_SAMPLE:
      out.kind = Kind::kSample;
      ok = DecodeSample(bytes, size, &out);
      break;
    case EHP_EVENT_VERIFY:
      out.kind = Kind::kVerify;
      ok = DecodeVerify(bytes, size, &out);
      break;
    case EHP_EVENT_DEFERRED:
      out.kind = Kind::kDeferred;
      ok = DecodeDeferred(bytes, size, &out);
      break;
    case EHP_EVENT_MAPPING:
      out.kind = Kind::kMapping;
      ok = size >= sizeof(ehp_mapping_event);
      if (ok) std::memcpy(&out.mapping, bytes, sizeof(out.mapping));
      break;
    default: {
      // The kinds whose header is all they carry.
      constexpr std::pair<uint32_t, Kind> kHeaderOnly[] = {
          {EHP_EVENT_EXEC, Kind::kExec},
          {EHP_EVENT_EXIT, Kind::kExit},
          {EHP_EVENT_FORK, Kind::kFork},
          {EHP_EVENT_UNKNOWN_PID, Kind::kUnknownPid},
          {EHP_EVENT_UNKNOWN_PC, Kind::kUnknownPc},
          {EHP_EVENT_NEW_FILE, Kind::kNewFile},
      };
      out.kind = Kind::kOther;
      for (const auto& [raw, kind] : kHeaderOnly) {
        if (out.header.kind == raw) out.kind = kind;
      }
      break;
    }
  }
  if (!ok) out.kind = Kind::kMalformed;
  return out;
}

}  // namespace ehprof
