// The recorder's event decoding and its event sources without root: BPF
// records built byte for byte as bpf/ehprof_abi.h lays them out, written to
// a file of events and replayed through RecordedEventSource into
// DecodeEvent, as the recorder's loop takes them from the ring buffer.
// Broken records and files are refused with what was wrong, never read
// past their end.
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "agent/record/event_decoder.h"
#include "agent/record/recorded_events.h"
#include "gtest/gtest.h"

namespace ehprof {
namespace {

using Kind = DecodedEvent::Kind;
using Bytes = std::vector<uint8_t>;

ehp_event Header(uint32_t kind, uint32_t pid, uint64_t time_ns) {
  ehp_event ev{};
  ev.kind = kind;
  ev.pid = pid;
  ev.tid = pid + 1;
  ev.cpu = 3;
  ev.time_ns = time_ns;
  std::strncpy(ev.comm, "worker", sizeof(ev.comm));
  return ev;
}

template <typename T>
void Append(Bytes* out, const T& v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out->insert(out->end(), p, p + sizeof(v));
}

Bytes Sample(uint32_t pid, uint64_t time_ns, std::vector<uint64_t> kernel, std::vector<uint64_t> user,
             std::vector<uint64_t> user_fp, uint64_t off_cpu_ns = 0) {
  ehp_event ev = Header(EHP_EVENT_SAMPLE, pid, time_ns);
  ev.n_kernel = static_cast<uint16_t>(kernel.size());
  ev.n_user = static_cast<uint16_t>(user.size());
  ev.n_user_fp = static_cast<uint16_t>(user_fp.size());
  ev.stop_reason = EHP_STOP_END_OF_STACK;
  ev.bpf_ns = 1234;
  if (off_cpu_ns) {
    ev.flags = EHP_SAMPLE_OFF_CPU;
    ev.addr = off_cpu_ns;
  }
  Bytes out;
  Append(&out, ev);
  for (const auto* part : {&kernel, &user, &user_fp}) {
    for (uint64_t f : *part) Append(&out, f);
  }
  return out;
}

TEST(DecodeEvent, SampleFramesSplitAndEveryField) {
  const Bytes b = Sample(42, 1000, {0xffffffff81000010, 0xffffffff81000020}, {0x401000 | EHP_FRAME_EXACT, 0x402000, 0x403000},
                         {0x401000}, 5000);
  const DecodedEvent d = DecodeEvent(b.data(), b.size());
  ASSERT_EQ(d.kind, Kind::kSample);
  const RawSample& s = d.sample;
  EXPECT_EQ(s.pid, 42u);
  EXPECT_EQ(s.tid, 43u);
  EXPECT_EQ(s.cpu, 3u);
  EXPECT_EQ(s.time_ns, 1000u);
  EXPECT_EQ(s.comm, "worker");
  EXPECT_EQ(s.stop_reason, EHP_STOP_END_OF_STACK);
  EXPECT_EQ(s.bpf_ns, 1234u);
  EXPECT_EQ(s.flags, uint32_t{EHP_SAMPLE_OFF_CPU});
  EXPECT_EQ(s.off_cpu_ns, 5000u);
  EXPECT_EQ(s.kernel, (std::vector<uint64_t>{0xffffffff81000010, 0xffffffff81000020}));
  EXPECT_EQ(s.user, (std::vector<uint64_t>{0x401000 | EHP_FRAME_EXACT, 0x402000, 0x403000}));
  EXPECT_EQ(s.user_fp, (std::vector<uint64_t>{0x401000}));
}

TEST(DecodeEvent, AFullLengthCommHasNoTerminator) {
  Bytes b = Sample(1, 1, {}, {}, {});
  std::memset(b.data() + offsetof(ehp_event, comm), 'x', EHP_COMM_LEN);
  EXPECT_EQ(DecodeEvent(b.data(), b.size()).sample.comm, std::string(EHP_COMM_LEN, 'x'));
}

TEST(DecodeEvent, VerifyMappingAndTheOtherKinds) {
  Bytes v;
  Append(&v, Header(EHP_EVENT_VERIFY, 7, 9));
  ehp_verify verify{};
  verify.regs[EHP_REG_RIP] = 0x401234;
  verify.stack_len = 16;
  Append(&v, verify);
  for (uint8_t i = 0; i < 16; ++i) v.push_back(i);
  DecodedEvent d = DecodeEvent(v.data(), v.size());
  ASSERT_EQ(d.kind, Kind::kVerify);
  EXPECT_EQ(d.verify.regs[EHP_REG_RIP], 0x401234u);
  EXPECT_EQ(d.verify.stack.size(), 16u);
  EXPECT_EQ(d.verify.stack[15], 15);
  // leaf_exact 0 (a syscall's return pc) reaches the capture: the replay and
  // libdwfl look such a leaf up at pc - 1, as the kernel walk did.
  EXPECT_FALSE(d.verify.exact);
  verify.leaf_exact = 1;
  std::memcpy(v.data() + sizeof(ehp_event), &verify, sizeof(verify));
  EXPECT_TRUE(DecodeEvent(v.data(), v.size()).verify.exact);

  ehp_mapping_event me{};
  me.ev = Header(EHP_EVENT_MAPPING, 7, 9);
  me.ev.addr = 0x1000;
  me.file.ino = 99;
  d = DecodeEvent(&me, sizeof(me));
  ASSERT_EQ(d.kind, Kind::kMapping);
  EXPECT_EQ(d.mapping.file.ino, 99u);
  EXPECT_EQ(d.header.addr, 0x1000u);

  const std::pair<uint32_t, Kind> kinds[] = {{EHP_EVENT_EXEC, Kind::kExec},       {EHP_EVENT_EXIT, Kind::kExit},
                                             {EHP_EVENT_FORK, Kind::kFork},       {EHP_EVENT_UNKNOWN_PID, Kind::kUnknownPid},
                                             {EHP_EVENT_UNKNOWN_PC, Kind::kUnknownPc}, {999, Kind::kOther}};
  for (const auto& [raw, kind] : kinds) {
    ehp_event ev = Header(raw, 5, 6);
    EXPECT_EQ(DecodeEvent(&ev, sizeof(ev)).kind, kind) << raw;
  }
}

TEST(DecodeEvent, RecordsShorterThanTheirHeaderSaysAreMalformed) {
  Bytes s = Sample(1, 1, {1, 2}, {3}, {});
  EXPECT_EQ(DecodeEvent(s.data(), s.size() - 1).kind, Kind::kMalformed);
  EXPECT_EQ(DecodeEvent(s.data(), sizeof(ehp_event) - 1).kind, Kind::kMalformed);
  Bytes v;
  Append(&v, Header(EHP_EVENT_VERIFY, 7, 9));
  ehp_verify verify{};
  verify.stack_len = 65536;  // more than the record holds
  Append(&v, verify);
  EXPECT_EQ(DecodeEvent(v.data(), v.size()).kind, Kind::kMalformed);
  ehp_mapping_event me{};
  me.ev = Header(EHP_EVENT_MAPPING, 7, 9);
  EXPECT_EQ(DecodeEvent(&me, sizeof(me) - 8).kind, Kind::kMalformed);
}

TEST(DecodeEvent, DeferredWalkStateAndItsStackCopy) {
  Bytes b;
  Append(&b, Header(EHP_EVENT_DEFERRED, 7, 9));
  ehp_deferred st{};
  st.regs[EHP_REG_RSP] = 0x7ffd0000;
  st.regs[EHP_REG_RIP] = 0x401234;
  st.valid = 1u << EHP_REG_RSP;
  st.n_user = 3;
  st.stop_reason = EHP_STOP_NO_TABLE;
  st.stack_len = 24;
  Append(&b, st);
  for (uint8_t i = 0; i < 24; ++i) b.push_back(i);
  DecodedEvent d = DecodeEvent(b.data(), b.size());
  ASSERT_EQ(d.kind, Kind::kDeferred);
  EXPECT_EQ(d.deferred.state.regs[EHP_REG_RIP], 0x401234u);
  EXPECT_EQ(d.deferred.state.valid, 1u << EHP_REG_RSP);
  EXPECT_EQ(d.deferred.state.n_user, 3u);
  EXPECT_EQ(d.deferred.state.stop_reason, EHP_STOP_NO_TABLE);
  ASSERT_EQ(d.deferred.stack.size(), 24u);
  EXPECT_EQ(d.deferred.stack[23], 23);
  // A copy longer than the record, or than any the BPF side makes.
  EXPECT_EQ(DecodeEvent(b.data(), b.size() - 1).kind, Kind::kMalformed);
  st.stack_len = EHP_DEFERRED_STACK_MAX + 8;
  std::memcpy(b.data() + sizeof(ehp_event), &st, sizeof(st));
  b.resize(sizeof(ehp_event) + sizeof(st) + st.stack_len);
  EXPECT_EQ(DecodeEvent(b.data(), b.size()).kind, Kind::kMalformed);
}

class EventFile : public ::testing::Test {
 protected:
  void SetUp() override { path_ = ::testing::TempDir() + "/events." + std::to_string(getpid()); }
  void TearDown() override { ::unlink(path_.c_str()); }
  std::string path_;
};

TEST_F(EventFile, ReplaysARecordedStreamInOrderThroughTheDecoder) {
  std::vector<Bytes> stream;
  for (uint32_t i = 0; i < 5; ++i) stream.push_back(Sample(100 + i, 1000 + i, {0xffffffff81000000 + i}, {0x401000 + i}, {}));
  ehp_event exec = Header(EHP_EVENT_EXEC, 104, 2000);
  stream.emplace_back(reinterpret_cast<uint8_t*>(&exec), reinterpret_cast<uint8_t*>(&exec) + sizeof(exec));
  stream.push_back({});  // an empty record is handed over as one
  {
    auto w = EventFileWriter::Create(path_);
    ASSERT_TRUE(w.ok()) << w.status();
    for (const Bytes& b : stream) ASSERT_TRUE(w->Write(b.data(), b.size()).ok());
  }
  std::vector<DecodedEvent> got;
  auto src = RecordedEventSource::Open(
      path_, [&](const void* data, size_t size) { got.push_back(DecodeEvent(data, size)); }, 3);
  ASSERT_TRUE(src.ok()) << src.status();
  EXPECT_EQ((*src)->Poll(100), 3);
  EXPECT_EQ((*src)->Poll(100), 3);
  EXPECT_EQ((*src)->Poll(100), 1);
  EXPECT_EQ((*src)->Poll(100), 0);
  EXPECT_TRUE((*src)->done());
  EXPECT_TRUE((*src)->status().ok()) << (*src)->status();
  ASSERT_EQ(got.size(), stream.size());
  for (uint32_t i = 0; i < 5; ++i) {
    ASSERT_EQ(got[i].kind, Kind::kSample);
    EXPECT_EQ(got[i].sample.pid, 100 + i);
    EXPECT_EQ(got[i].sample.user, std::vector<uint64_t>{0x401000 + i});
  }
  EXPECT_EQ(got[5].kind, Kind::kExec);
  EXPECT_EQ(got[6].kind, Kind::kMalformed);
}

TEST_F(EventFile, ATruncatedOrHostileFileSaysWhatWasWrongAfterWhatCameBefore) {
  const Bytes s = Sample(1, 1, {}, {0x401000}, {});
  {
    auto w = EventFileWriter::Create(path_);
    ASSERT_TRUE(w.ok());
    ASSERT_TRUE(w->Write(s.data(), s.size()).ok());
  }
  // A record cut short.
  const Bytes tail = {static_cast<uint8_t>(s.size()), 0, 0, 0, 1, 2, 3};
  FILE* f = fopen(path_.c_str(), "ab");
  fwrite(tail.data(), 1, tail.size(), f);
  fclose(f);
  size_t n = 0;
  auto src = RecordedEventSource::Open(path_, [&](const void*, size_t) { ++n; });
  ASSERT_TRUE(src.ok());
  (*src)->Drain();
  EXPECT_EQ(n, 1u);
  EXPECT_EQ((*src)->status().code(), absl::StatusCode::kDataLoss);
  EXPECT_NE((*src)->status().message().find(path_), std::string::npos) << (*src)->status();

  // A length no record has: refused before anything is allocated for it.
  const Bytes huge = {0, 0, 0, 0x40};
  f = fopen(path_.c_str(), "wb");
  fwrite(huge.data(), 1, huge.size(), f);
  fclose(f);
  n = 0;
  src = RecordedEventSource::Open(path_, [&](const void*, size_t) { ++n; });
  ASSERT_TRUE(src.ok());
  EXPECT_EQ((*src)->Poll(0), 0);
  EXPECT_EQ(n, 0u);
  EXPECT_NE((*src)->status().message().find("not a file of events"), std::string::npos) << (*src)->status();
  EXPECT_FALSE(RecordedEventSource::Open(path_ + ".none", [](const void*, size_t) {}).ok());
}

}  // namespace
}  // namespace ehprof
