// Where a recording's samples go: on the recording thread, as each one
// arrives (decoded, its Python frames named, the process tracker current).
// `ehprof record` keeps them in a SampleList; `ehprof agent` aggregates
// them into its interval (AgentLoop).
#ifndef EHPROF_AGENT_RECORD_SAMPLE_SINK_H_
#define EHPROF_AGENT_RECORD_SAMPLE_SINK_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "agent/record/raw_sample.h"
#include "bpf/ehprof_abi.h"

namespace ehprof {

class ProcessTracker;

class SampleSink {
 public:
  virtual ~SampleSink() = default;
  virtual void Add(RawSample&& s, const ProcessTracker& tracker) = 0;
  // --verify's capture (header: its VERIFY event's), sent right after its
  // sample on the same CPU: dropped by a sink that keeps no samples.
  virtual void AddCapture(const ehp_event& header, VerifyCapture&& c) {
    (void)header;
    (void)c;
  }
  // pid exec'd or exited: its later samples are another image's.
  virtual void NewImage(uint32_t pid) { (void)pid; }
  // Whether an exited process's mappings must be kept to resolve its
  // samples later (false: the sink resolved what it needs as they came).
  virtual bool ResolvesLater() const { return false; }
};

// Every sample in arrival order, or with aggregate, equal samples (same
// thread, image, flags, comm, stacks and stop reasons) kept once with a
// count, so memory grows with distinct stacks, not with samples; each
// --verify capture matched to its sample.
class SampleList : public SampleSink {
 public:
  explicit SampleList(bool aggregate) : aggregate_(aggregate) {}
  void Add(RawSample&& s, const ProcessTracker& tracker) override;
  void AddCapture(const ehp_event& header, VerifyCapture&& c) override;
  void NewImage(uint32_t pid) override { ++exec_gen_[pid]; }
  bool ResolvesLater() const override { return true; }
  const std::vector<RawSample>& samples() const { return samples_; }
  const std::vector<VerifyCapture>& captures() const { return captures_; }

 private:
  struct Key {
    uint32_t pid, tid, exec_gen, flags;
    uint8_t stop, fp_stop;
    std::string comm;
    std::vector<uint64_t> kernel, user, user_fp;
    bool operator==(const Key&) const = default;
    template <typename H>
    friend H AbslHashValue(H h, const Key& k) {
      return H::combine(std::move(h), k.pid, k.tid, k.exec_gen, k.flags, k.stop, k.fp_stop, k.comm, k.kernel,
                        k.user, k.user_fp);
    }
  };
  bool aggregate_;
  std::vector<RawSample> samples_;
  std::vector<VerifyCapture> captures_;
  // The index of each CPU's latest sample: its VERIFY event follows.
  std::map<uint32_t, size_t> last_sample_on_cpu_;
  absl::flat_hash_map<Key, size_t> index_;
  absl::flat_hash_map<uint32_t, uint32_t> exec_gen_;  // execs and exits per pid
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_SAMPLE_SINK_H_
