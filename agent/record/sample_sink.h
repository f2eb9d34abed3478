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
#include "absl/functional/function_ref.h"
#include "agent/record/raw_sample.h"
#include "agent/record/stack_counter.h"
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
// count in the StackCounter the agent keeps its intervals with (frames
// interned: memory grows with distinct stacks and frames, not with
// samples); each --verify capture matched to its sample.
class SampleList : public SampleSink {
 public:
  explicit SampleList(bool aggregate) : aggregate_(aggregate) {}
  void Add(RawSample&& s, const ProcessTracker& tracker) override;
  void AddCapture(const ehp_event& header, VerifyCapture&& c) override;
  void NewImage(uint32_t pid) override { ++exec_gen_[pid]; }
  bool ResolvesLater() const override { return true; }
  // Every sample in arrival order (not aggregated; empty when aggregated).
  const std::vector<RawSample>& samples() const { return samples_; }
  const std::vector<VerifyCapture>& captures() const { return captures_; }
  // Aggregated: the distinct stacks.
  const Stacks<uint64_t>& stacks() const { return stacks_.stacks(); }
  bool empty() const { return samples_.empty() && stacks().counts.empty(); }
  // Every sample, or each distinct one once with its count (its time and
  // CPU the first's), in arrival order.
  void ForEach(absl::FunctionRef<void(const RawSample&)> fn) const;

 private:
  bool aggregate_;
  std::vector<RawSample> samples_;
  std::vector<VerifyCapture> captures_;
  // The index of each CPU's latest sample: its VERIFY event follows.
  std::map<uint32_t, size_t> last_sample_on_cpu_;
  StackCounter<uint64_t> stacks_;
  absl::flat_hash_map<uint32_t, uint32_t> exec_gen_;  // execs and exits per pid
};

}  // namespace ehprof

#endif  // EHPROF_AGENT_RECORD_SAMPLE_SINK_H_
