// BPF records built byte for byte as bpf/ehprof_abi.h lays them out, for
// the tests that replay a stream of them without root, and the stream
// written to a file of events (agent/record/recorded_events.h).
#ifndef EHPROF_TESTS_EVENT_RECORDS_H_
#define EHPROF_TESTS_EVENT_RECORDS_H_

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "agent/record/recorded_events.h"
#include "bpf/ehprof_abi.h"
#include "gtest/gtest.h"

namespace ehprof::testing {

using Bytes = std::vector<uint8_t>;

template <typename T>
void Append(Bytes* out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof(v));
}

inline ehp_event Header(uint32_t kind, uint32_t pid, uint32_t cpu, uint64_t time_ns) {
  ehp_event ev{};
  ev.kind = kind;
  ev.pid = ev.tid = pid;
  ev.cpu = cpu;
  ev.time_ns = time_ns;
  std::strncpy(ev.comm, "app", sizeof(ev.comm));
  return ev;
}

// A sample of two user frames: leaf, then 0x401500.
inline Bytes Sample(uint32_t pid, uint32_t cpu, uint64_t time_ns, uint64_t leaf) {
  ehp_event ev = Header(EHP_EVENT_SAMPLE, pid, cpu, time_ns);
  ev.n_user = 2;
  Bytes out;
  Append(&out, ev);
  Append(&out, leaf);
  Append(&out, uint64_t{0x401500});
  return out;
}

inline Bytes Verify(uint32_t pid, uint32_t cpu, uint64_t time_ns) {
  Bytes out;
  Append(&out, Header(EHP_EVENT_VERIFY, pid, cpu, time_ns));
  ehp_verify v{};
  v.stack_len = 8;
  Append(&out, v);
  Append(&out, uint64_t{0x1122334455667788});
  return out;
}

// A record of `kind` with nothing after its header (addr: the fork's
// child, the unknown pc).
inline Bytes Plain(uint32_t kind, uint32_t pid, uint64_t time_ns = 0, uint64_t addr = 0) {
  ehp_event ev = Header(kind, pid, 0, time_ns);
  ev.addr = addr;
  Bytes out;
  Append(&out, ev);
  return out;
}

inline void WriteEvents(const std::string& path, const std::vector<Bytes>& stream) {
  auto w = EventFileWriter::Create(path);
  ASSERT_TRUE(w.ok()) << w.status();
  for (const Bytes& b : stream) ASSERT_TRUE(w->Write(b.data(), b.size()).ok());
}

}  // namespace ehprof::testing

#endif  // EHPROF_TESTS_EVENT_RECORDS_H_
